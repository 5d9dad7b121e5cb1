// Package stack runs the lab's topology on loopback: one Redis, several
// app instances (each its own OS process, supervised and restarted if it
// dies) and a load balancer in front of them, the same shape as
// docker-compose.yml, plus the independent Redis masters of the redlock
// rung. Real redis-server and nginx are used when they are on PATH;
// otherwise an embedded miniredis and a built-in Go reverse proxy stand in,
// and the stack says so (Summary). Every process it starts is stopped by
// pid.
//
// Each kind of server is behind one shape (proc.Server); this file only
// composes them. The servers live in subpackages, none of which imports
// stack:
// stack/proc supervises processes (start in a process group, stop by
// pid, never a reused one; the server account; data dirs; free ports);
// stack/lb is the load balancer (nginx, or the built-in proxy);
// stack/backends the servers of the rungs that are not Redis's
// (ZooKeeper, etcd, MariaDB, PostgreSQL);
// stack/redisfam the Redis servers (redis-server or miniredis, the
// Redlock masters, a Redis Cluster); stack/sentinel a primary, its
// replica and their sentinels; stack/embedded holds miniredis and its
// Lua runner; stack/faultproxy
// the proxy that injects faults between an app and Redis.
package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/faultproxy"
	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// Stack is a running topology. Its methods are safe for concurrent use.
type Stack struct {
	cfg       Config
	faultKey  string // FaultKey
	redisPass string // RedisPassword
	dir       string
	rmDir     bool
	lg        *proc.Logger
	appPorts  []string // the instances' ports; nil: free ones, picked at start

	// servers are those launched, in order: Stop stops them in reverse.
	servers []proc.Server

	redis         *redisfam.Server  // nil on a cluster
	cluster       *redisfam.Cluster // Config.Cluster
	masters       *redisfam.Masters
	backends      []backends.Backend  // ZooKeeper, MariaDB, etcd: those started
	data          *proc.DataRoot      // where they keep their data; nil without them
	backendMu     sync.Mutex          // StopBackend, StartBackend and Pids
	backendDown   map[string]bool     // kinds stopped by StopBackend
	redisProxy    *faultproxy.Proxy   // Config.RedisProxy
	masterProxies []*faultproxy.Proxy // Config.MasterProxies, in MasterAddrs order
	instances     []*instance
	lb            lb.LoadBalancer

	lbMu   sync.Mutex // serialises load balancer changes (Drain)
	lbDown []bool     // instances taken out of the load balancer

	life       context.Context // cancelled by Stop: supervisors return
	end        context.CancelFunc
	wg         sync.WaitGroup
	restarts   atomic.Int64 // after unexpected exits
	lbRestarts atomic.Int64 // nginx's, after its master died
	drains     atomic.Int64 // after Drain
	stopOnce   sync.Once
	stopErr    error
}

// Start starts Redis, the app instances and the load balancer, and returns
// once every instance and the load balancer answer GET /healthz with 200.
// ctx bounds the start only; without a deadline, each server's wait to
// serve is bounded by Config.StartTimeout (proc.LaunchWithin). On any
// failure it stops whatever it started.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, lg: proc.NewLogger(cfg.Log)}
	if s.faultKey, err = newFaultKey(); err != nil {
		return nil, err
	}
	s.redisPass = backends.NewPassword()
	s.life, s.end = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	// Decide both modes before starting anything.
	if _, _, err := proc.ResolveMode(cfg.Redis, "redis-server", cfg.RequireReal); err != nil {
		return nil, fmt.Errorf("stack: redis: %w", err)
	}
	realLB, nginxBin, err := proc.ResolveMode(cfg.LB, "nginx", cfg.RequireReal)
	if err != nil {
		return nil, fmt.Errorf("stack: lb: %w", err)
	}
	if _, err := os.Stat(cfg.AppBinary); err != nil {
		return nil, fmt.Errorf("stack: app binary: %w (build it: go build -o bin/app ./cmd/app)", err)
	}
	var nginxSrc []byte
	if realLB {
		// Read once: Drain's reloads derive from these bytes, whatever
		// happens to the file meanwhile.
		if nginxSrc, err = os.ReadFile(cfg.NginxConf); err != nil {
			return nil, fmt.Errorf("stack: nginx: %w (set Config.NginxConf)", err)
		}
	}

	// A fixed port already taken would be worse than a failure: the health
	// checks could be answered by whatever holds it (another stack).
	if err := checkPortsFree(cfg); err != nil {
		return nil, err
	}
	if err := s.makeDir(); err != nil {
		return nil, err
	}
	if err := s.writePassword(); err != nil {
		return nil, err
	}

	// Each part once the ones it needs serve: Redis and the masters, the
	// fault proxies in front of them, the instances that dial those, the
	// load balancer in front of the instances. (redisfam.NewServer says so when
	// Auto falls back to miniredis.)
	embedded, kind := false, ""
	if cfg.Cluster > 0 {
		if s.cluster, err = s.startCluster(ctx); err != nil {
			return nil, err
		}
		kind = s.cluster.Kind()
	} else {
		if s.redis, err = redisfam.NewServer(cfg.RedisAddr, cfg.Redis, cfg.RequireReal, s.dir, s.redisPass, s.lg); err != nil {
			return nil, err
		}
		if err := s.up(ctx, s.redis); err != nil {
			return nil, err
		}
		s.lg.Printf("%s", s.redis.Summary())
		embedded, kind = s.redis.Embedded(), s.redis.Kind()
	}

	s.masters = redisfam.NewMasters(cfg.Masters, embedded, kind, cfg.RedisAddr, cfg.RequireReal, cfg.MastersAOF, s.dir, s.redisPass, s.lg)
	if err := s.up(ctx, s.masters); err != nil {
		return nil, err
	}
	if l := s.masters.Summary(); l != "" {
		s.lg.Printf("%s", l)
	}

	want := func(m Mode) bool { return m != "" && m != Off }
	if want(cfg.ZooKeeper) || want(cfg.MariaDB) || want(cfg.Etcd) || want(cfg.Postgres) {
		if s.data, err = proc.NewDataRoot(cfg.Data, s.dir, s.lg); err != nil {
			return nil, err
		}
	}
	if s.backends, err = newBackends(cfg, s.dir, s.data, s.lg); err != nil {
		return nil, err
	}
	if err := s.startBackends(ctx); err != nil {
		return nil, err
	}

	if err := s.startFaultProxies(ctx); err != nil {
		return nil, err
	}
	// The load balancer's port is picked first (the race server is told
	// its URL), and held until the instances have theirs: released at
	// once, it could be handed to one of them.
	s.appPorts = cfg.appPorts()
	unhold := func() {}
	if host, port, _ := net.SplitHostPort(cfg.LBAddr); port == "0" {
		ports, release, err := proc.ReservePorts(host, 1)
		if err != nil {
			return nil, err
		}
		unhold = release
		cfg.LBAddr = net.JoinHostPort(host, ports[0])
		s.cfg.LBAddr = cfg.LBAddr
	}
	err = s.startInstances(ctx)
	unhold()
	if err != nil {
		return nil, err
	}

	var races *raceServer
	if cfg.Races != nil {
		races = &raceServer{h: cfg.Races("http://"+cfg.LBAddr, s)}
		if err := s.up(ctx, races); err != nil {
			return nil, err
		}
	}
	if realLB {
		host, port, _ := net.SplitHostPort(cfg.LBAddr)
		n := lb.NewNginx(nginxBin, nginxSrc, s.dir, host, port, s.instanceAddrs())
		if races != nil {
			n.Race = races.Addr()
		}
		s.lb = n
	} else {
		if cfg.LB != Embedded {
			s.lg.Printf("nginx not found on PATH: using the built-in Go reverse proxy (round robin, no retry, in this process)")
		}
		p := lb.NewProxyServer(cfg.LBAddr, s.InstanceURLs())
		if races != nil {
			p.Race = races.h
		}
		s.lb = p
	}
	if err := s.up(ctx, s.lb); err != nil {
		return nil, err
	}
	s.lg.Printf("%s", s.lb.Summary())

	for _, in := range s.instances {
		s.wg.Add(1)
		go s.supervise(in)
	}
	if n, ok := s.lb.(*lb.Nginx); ok {
		s.wg.Add(1)
		go s.superviseLB(n)
	}
	s.lg.Printf("stack: up at %s", s.URL())
	return s, nil
}

// up launches srv and, once it serves, leaves it to Stop. Its wait to
// serve is bounded by Config.StartTimeout, its start's work is not.
func (s *Stack) up(ctx context.Context, srv proc.Server) error {
	if err := proc.LaunchWithin(ctx, srv, s.cfg.StartTimeout); err != nil {
		return err
	}
	s.servers = append(s.servers, srv)
	return nil
}

func (s *Stack) makeDir() error {
	if s.cfg.Dir == "" {
		d, err := proc.TempDir("stack")
		if err != nil {
			return fmt.Errorf("stack: run dir: %w", err)
		}
		s.dir, s.rmDir = d, true
		// nginx workers (unprivileged when we are root) use temp dirs in here.
		return os.Chmod(d, 0o755)
	}
	d, err := filepath.Abs(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("stack: run dir: %w", err)
	}
	s.dir = d
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("stack: run dir: %w", err)
	}
	// A kept run dir holds the last stack's logs. The other servers' and
	// the instances' are named by role and start over; Redis's are named
	// by port (masters share the dir), picked anew by each stack, so the
	// earlier stacks' would pile up: they go.
	old, _ := filepath.Glob(filepath.Join(d, "redis-*.log"))
	for _, f := range old {
		os.Remove(f)
	}
	return nil
}

// URL is the load balancer's base URL, e.g. "http://127.0.0.1:8080".
func (s *Stack) URL() string { return "http://" + s.lb.Addr() }

// InProcess reports whether this process serves part of the stack
// itself: the embedded Redis, the built-in proxy, an embedded etcd or a
// fault proxy. Whatever else it does (sending the load) then shares its
// threads with them.
func (s *Stack) InProcess() bool {
	if s.redis != nil && s.redis.Embedded() {
		return true
	}
	if _, ok := s.lb.(*lb.ProxyServer); ok {
		return true
	}
	for _, b := range s.backends {
		if b.Pid() == 0 {
			return true
		}
	}
	return s.redisProxy != nil || len(s.masterProxies) > 0
}

// InstanceURLs are the direct base URLs of the app instances.
func (s *Stack) InstanceURLs() []string {
	urls := make([]string, len(s.instances))
	for i, in := range s.instances {
		urls[i] = "http://" + in.addr
	}
	return urls
}

func (s *Stack) instanceAddrs() []string {
	addrs := make([]string, len(s.instances))
	for i, in := range s.instances {
		addrs[i] = in.addr
	}
	return addrs
}

// RedisAddr is the host:port of the stack's Redis; on a cluster, its
// first node's.
func (s *Stack) RedisAddr() string {
	if s.cluster != nil {
		return s.cluster.Addrs()[0]
	}
	return s.redis.Addr()
}

// ClusterAddrs is every node of the stack's Redis Cluster, masters first
// (nil without one).
func (s *Stack) ClusterAddrs() []string {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Addrs()
}

// Dir is the run dir (logs, derived nginx.conf, pid files).
func (s *Stack) Dir() string { return s.dir }

// Restarts counts instance restarts by the supervisor after an unexpected
// exit (a crash, a kill); the restarts that finish a Drain are not
// counted.
func (s *Stack) Restarts() int { return int(s.restarts.Load()) }

// Instances is the number of app instances.
func (s *Stack) Instances() int { return len(s.instances) }

// InstancePids are the app instances' current pids, in instance order
// (after a restart by the supervisor, the new process's).
func (s *Stack) InstancePids() []int {
	pids := make([]int, len(s.instances))
	for i, in := range s.instances {
		if p := in.current(); p != nil {
			pids[i] = p.Pid()
		}
	}
	return pids
}

// Pids lists every OS process the stack started and runs now (after Stop:
// the last ones): redis-server, the redis-server masters that are not
// stopped, the nginx master, the app instances.
func (s *Stack) Pids() []int {
	var pids []int
	if s.redis != nil {
		if pid := s.redis.Pid(); pid != 0 { // 0: embedded, or stopped by StopRedis
			pids = append(pids, pid)
		}
	}
	if s.cluster != nil {
		pids = append(pids, s.cluster.Pids()...)
	}
	if s.masters != nil {
		pids = append(pids, s.masters.Pids()...)
	}
	s.backendMu.Lock()
	for _, b := range s.backends {
		if pid := b.Pid(); pid != 0 && !s.backendDown[b.Kind()] {
			pids = append(pids, pid)
		}
	}
	s.backendMu.Unlock()
	if s.lb != nil && s.lb.Pid() != 0 {
		pids = append(pids, s.lb.Pid())
	}
	for _, in := range s.instances {
		if p := in.current(); p != nil {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// Summary says, one line per component, what runs: real or embedded Redis,
// the Redlock masters (one line for all), nginx or the built-in proxy, each
// app instance, with versions and pids.
func (s *Stack) Summary() []string {
	var lines []string
	if s.cluster != nil {
		lines = append(lines, s.cluster.Summary())
	} else {
		lines = append(lines, s.redis.Summary())
	}
	if l := s.masters.Summary(); l != "" {
		lines = append(lines, l)
	}
	for _, b := range s.backends {
		lines = append(lines, b.Summary())
	}
	if l := s.faultProxiesSummary(); l != "" {
		lines = append(lines, l)
	}
	for _, in := range s.instances {
		lines = append(lines, s.instanceSummary(in))
	}
	lines = append(lines, s.lb.Summary())
	if n := s.Restarts(); n > 0 {
		lines = append(lines, fmt.Sprintf("supervisor: %d instance restart(s)", n))
	}
	if n := s.drains.Load(); n > 0 {
		lines = append(lines, fmt.Sprintf("supervisor: %d drained instance(s) restarted", n))
	}
	if n := s.LBRestarts(); n > 0 {
		lines = append(lines, fmt.Sprintf("supervisor: %d load balancer restart(s)", n))
	}
	return lines
}

// Stop stops the load balancer, the instances, the fault proxies, the
// masters and Redis (the reverse of their start), each process by pid
// (SIGTERM, then SIGKILL after a grace period), waits for them and
// removes a temp run dir. It is idempotent and safe after a failed Start.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.end()
		s.wg.Wait() // the supervisors: no restart from here on
		var errs []error
		for i := len(s.servers) - 1; i >= 0; i-- {
			errs = append(errs, s.servers[i].Stop())
		}
		errs = append(errs, s.removeBackends(), s.data.Remove(), s.removePassword())
		if s.rmDir {
			errs = append(errs, os.RemoveAll(s.dir))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}
