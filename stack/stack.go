// Package stack runs the lab's topology on loopback: one Redis, several
// app instances (each its own OS process, supervised and restarted if it
// dies) and a load balancer in front of them, the same shape as
// docker-compose.yml, plus the independent Redis masters of the redlock
// rung. Real redis-server and nginx are used when they are on PATH;
// otherwise an embedded miniredis and a built-in Go reverse proxy stand in,
// and the stack says so (Summary). Every process it starts is stopped by
// pid.
package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// server is the shape of every kind of server the stack runs, each in a
// file of its own: so far redis-server (redisserver.go) and the embedded
// miniredis (miniredis.go), with the Redis over both (redis.go), a
// sentinel (sentinel.go, its group in sentinelgroup.go), nginx (nginx.go)
// and the built-in proxy (proxy.go). A new kind is one more file
// implementing it.
//
// start launches it (a process, or a listener in this process) without
// waiting for it to serve; ready returns once it serves, or fails when it
// exited or ctx ended first; stop stops whatever start started (a process
// by its pid: SIGTERM, then SIGKILL after a grace period) and waits for
// it. stop is safe after a failed start or ready.
type server interface {
	start(ctx context.Context) error
	ready(ctx context.Context) error
	stop() error
}

// launch starts srv and waits until it is ready; when either fails it
// stops srv, so that nothing it started is left behind.
func launch(ctx context.Context, srv server) error {
	err := srv.start(ctx)
	if err == nil {
		err = srv.ready(ctx)
	}
	if err != nil {
		srv.stop()
		return err
	}
	return nil
}

// group is servers launched together: each of start, ready and stop runs
// on all of them at once and returns when all have, with their errors
// joined.
type group []server

func (g group) start(ctx context.Context) error {
	return each(len(g), func(i int) error { return g[i].start(ctx) })
}

func (g group) ready(ctx context.Context) error {
	return each(len(g), func(i int) error { return g[i].ready(ctx) })
}

func (g group) stop() error {
	return each(len(g), func(i int) error { return g[i].stop() })
}

// each runs f(0) to f(n-1) at once and joins their errors.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadBalancer is the server in front of the instances: nginx (nginx.go)
// or the built-in proxy (proxy.go). Its ready returns once it routes to
// the instances (routesReady).
type loadBalancer interface {
	server
	addr() string
	// pid is its process's, 0 when it serves in this process.
	pid() int
	// setDown takes instance i out of the rotation (down) or puts it
	// back, and returns once the change is in effect (see Stack.Drain).
	setDown(ctx context.Context, i int, down bool) error
	summary() string
}

// routesReady sends one health check per instance through the load
// balancer at base: the built-in proxy's round robin sends each to
// another instance; nginx's workers each keep their own rotation, so
// there it is likely, not certain (the instances have each answered
// directly already). exited closes if the load balancer's process dies.
func routesReady(ctx context.Context, base string, instances int, exited <-chan struct{}) error {
	for range instances {
		if err := waitHealthy(ctx, base, exited); err != nil {
			return fmt.Errorf("stack: load balancer: %w", err)
		}
	}
	return nil
}

// Stack is a running topology. Its methods are safe for concurrent use.
type Stack struct {
	cfg   Config
	dir   string
	rmDir bool
	lg    *logger

	redis     *Redis
	instances []*instance

	mastersMu sync.Mutex // guards masters and each master's r
	masters   []*master

	lb loadBalancer // nginx or the built-in proxy

	lbMu   sync.Mutex // serialises load balancer changes (Drain)
	lbDown []bool     // instances taken out of the load balancer

	redisProxy    *FaultProxy   // Config.RedisProxy
	masterProxies []*FaultProxy // Config.MasterProxies, in MasterAddrs order

	life     context.Context // cancelled by Stop: supervisors return
	end      context.CancelFunc
	wg       sync.WaitGroup
	restarts atomic.Int64 // after unexpected exits
	drains   atomic.Int64 // after Drain
	stopOnce sync.Once
	stopErr  error
}

// instance is one supervised app process.
type instance struct {
	name, addr string
	args, env  []string // the same on every restart
	logPath    string

	mu      sync.Mutex
	p       *proc
	started time.Time

	// drainPid is the pid Drain sent SIGTERM to: when that process exits,
	// the supervisor logs it as drained, not as a crash, and restarts it
	// at once. The supervisor clears it.
	drainPid atomic.Int64
	draining sync.Mutex // one Drain at a time per instance
}

func (in *instance) current() *proc {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.p
}

var healthClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// Start starts Redis, the app instances and the load balancer, and returns
// once every instance and the load balancer answer GET /healthz with 200.
// ctx bounds the start only. On any failure it stops whatever it started.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Stack{cfg: cfg, lg: &logger{w: cfg.Log}}
	s.life, s.end = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	ctx, cancel := withDefaultTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	// Decide both modes before starting anything.
	if _, _, err := resolveMode(cfg.Redis, "redis-server", cfg.RequireReal); err != nil {
		return nil, fmt.Errorf("stack: redis: %w", err)
	}
	realLB, nginxBin, err := resolveMode(cfg.LB, "nginx", cfg.RequireReal)
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
	// startRedis says so when Auto falls back to miniredis.
	if s.redis, err = startRedis(ctx, cfg.RedisAddr, cfg.Redis, cfg.RequireReal, s.dir, s.lg); err != nil {
		return nil, err
	}
	if err := s.startMasters(ctx); err != nil {
		return nil, err
	}
	if err := s.startFaultProxies(); err != nil {
		return nil, err
	}

	if err := s.startInstances(ctx); err != nil {
		return nil, err
	}

	var lb loadBalancer
	if realLB {
		host, port, _ := net.SplitHostPort(cfg.LBAddr)
		lb = newNginx(nginxBin, nginxSrc, s.dir, host, port, s.instanceAddrs())
	} else {
		if cfg.LB != Embedded {
			s.lg.printf("nginx not found on PATH: using the built-in Go reverse proxy (round robin, no retry, in this process)")
		}
		lb = newProxyServer(cfg.LBAddr, s.InstanceURLs())
	}
	if err := launch(ctx, lb); err != nil {
		return nil, err
	}
	s.lb = lb
	s.lg.printf("%s", s.lb.summary())

	for _, in := range s.instances {
		s.wg.Add(1)
		go s.supervise(in)
	}
	s.lg.printf("stack: up at %s", s.URL())
	return s, nil
}

func (s *Stack) makeDir() error {
	if s.cfg.Dir == "" {
		d, err := os.MkdirTemp("", "lockladder-stack-")
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
	return nil
}

// startInstances starts every app process and waits until each is healthy.
func (s *Stack) startInstances(ctx context.Context) error {
	ports := s.cfg.appPorts()
	if ports == nil {
		// All at once, as for the masters: no two instances get one port.
		var err error
		if ports, err = freePorts("127.0.0.1", s.cfg.Instances); err != nil {
			return err
		}
	}
	masters := s.MasterAddrs()
	if len(s.masterProxies) > 0 {
		for i, p := range s.masterProxies {
			masters[i] = p.Addr()
		}
	}
	redisAddr := s.redis.Addr()
	if s.redisProxy != nil {
		redisAddr = s.redisProxy.Addr()
	}
	var mastersFlag []string
	if len(masters) > 0 {
		mastersFlag = []string{"-masters", strings.Join(masters, ",")}
	}
	env := instanceEnv(masters)
	for i, port := range ports {
		name := fmt.Sprintf("app%d", i+1)
		in := &instance{
			name:    name,
			addr:    net.JoinHostPort("127.0.0.1", port),
			logPath: filepath.Join(s.dir, name+".log"),
		}
		// Ours first: a flag repeated in AppArgs or InstanceArgs wins.
		in.args = append([]string{"-addr", in.addr, "-name", name, "-redis", redisAddr}, mastersFlag...)
		in.args = append(in.args, s.cfg.AppArgs...)
		in.args = append(in.args, s.cfg.InstanceArgs[i]...)
		in.env = env
		s.instances = append(s.instances, in)
		p, err := startProc(name, s.cfg.AppBinary, in.args, in.env, s.dir, in.logPath)
		if err != nil {
			return err
		}
		in.p, in.started = p, time.Now()
	}
	errs := make([]error, len(s.instances))
	var wg sync.WaitGroup
	for i, in := range s.instances {
		wg.Go(func() {
			if err := waitHealthy(ctx, "http://"+in.addr, in.p.done); err != nil {
				errs[i] = fmt.Errorf("stack: %s on %s: %w%s", in.name, in.addr, err, logTail(in.logPath, 2048))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.lbDown = make([]bool, len(s.instances))
	for _, in := range s.instances {
		s.lg.printf("%s", s.instanceSummary(in))
	}
	return nil
}

// instanceSummary is in's Summary line, with its current pid.
func (s *Stack) instanceSummary(in *instance) string {
	return fmt.Sprintf("%s: %s on %s (pid %d, log %s)", in.name, s.cfg.AppBinary, in.addr, in.current().pid(), in.logPath)
}

// waitHealthy polls base+"/healthz" until it answers 200, exited closes
// (the process died) or ctx ends.
func waitHealthy(ctx context.Context, base string, exited <-chan struct{}) error {
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		resp, err := healthClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("GET /healthz: %s", resp.Status)
		} else {
			last = err
		}
		select {
		case <-exited:
			return errors.New("process exited before it was healthy")
		case <-ctx.Done():
			return fmt.Errorf("not healthy: %w (last: %v)", ctx.Err(), last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// supervise restarts in whenever its process exits while the stack is up,
// with a backoff that grows while it keeps crashing early. An exit Drain
// asked for is no crash: it is logged as drained and restarted at once.
func (s *Stack) supervise(in *instance) {
	defer s.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		p := in.current()
		select {
		case <-s.life.Done():
			return
		case <-p.done:
		}
		if s.life.Err() != nil { // stopping: not a crash
			return
		}
		drained := in.drainPid.CompareAndSwap(int64(p.pid()), 0)
		wait := backoff
		if drained {
			wait = 0
			n := s.drains.Add(1)
			s.lg.printf("%s: pid %d drained (%v); restarting (drain #%d)", in.name, p.pid(), p.exitErr(), n)
		} else {
			n := s.restarts.Add(1)
			if time.Since(in.started) > s.cfg.StableAfter {
				backoff = 100 * time.Millisecond
			}
			wait = backoff
			s.lg.printf("%s: pid %d exited unexpectedly (%v); restarting in %s (restart #%d)", in.name, p.pid(), p.exitErr(), backoff, n)
		}
		for {
			select {
			case <-s.life.Done():
				return
			case <-time.After(wait):
			}
			if wait > 0 {
				backoff = min(2*backoff, 5*time.Second)
			}
			wait = backoff
			np, err := startProc(in.name, s.cfg.AppBinary, in.args, in.env, s.dir, in.logPath)
			if err != nil {
				s.lg.printf("%s: restart failed: %v; retrying in %s", in.name, err, backoff)
				continue
			}
			in.mu.Lock()
			in.p, in.started = np, time.Now()
			in.mu.Unlock()
			s.lg.printf("%s: restarted as pid %d", in.name, np.pid())
			break
		}
		// Say when it is serving again; if it dies first the loop above sees it.
		ctx, cancel := context.WithTimeout(s.life, 30*time.Second)
		np := in.current()
		if waitHealthy(ctx, "http://"+in.addr, np.done) == nil {
			s.lg.printf("%s: healthy again (pid %d)", in.name, np.pid())
		}
		cancel()
	}
}

// URL is the load balancer's base URL, e.g. "http://127.0.0.1:8080".
func (s *Stack) URL() string { return "http://" + s.lb.addr() }

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

// RedisAddr is the host:port of the stack's Redis.
func (s *Stack) RedisAddr() string { return s.redis.Addr() }

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
			pids[i] = p.pid()
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
	s.mastersMu.Lock()
	pids = append(pids, s.masterPidsLocked()...)
	s.mastersMu.Unlock()
	if s.lb != nil && s.lb.pid() != 0 {
		pids = append(pids, s.lb.pid())
	}
	for _, in := range s.instances {
		if p := in.current(); p != nil {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// Summary says, one line per component, what runs: real or embedded Redis,
// the Redlock masters (one line for all), nginx or the built-in proxy, each
// app instance, with versions and pids.
func (s *Stack) Summary() []string {
	lines := []string{s.redis.summary()}
	s.mastersMu.Lock()
	if l := s.mastersSummaryLocked(); l != "" {
		lines = append(lines, l)
	}
	s.mastersMu.Unlock()
	if l := s.faultProxiesSummary(); l != "" {
		lines = append(lines, l)
	}
	for _, in := range s.instances {
		lines = append(lines, s.instanceSummary(in))
	}
	lines = append(lines, s.lb.summary())
	if n := s.Restarts(); n > 0 {
		lines = append(lines, fmt.Sprintf("supervisor: %d instance restart(s)", n))
	}
	if n := s.drains.Load(); n > 0 {
		lines = append(lines, fmt.Sprintf("supervisor: %d drained instance(s) restarted", n))
	}
	return lines
}

// Stop stops the load balancer, the instances, Redis and the masters, each
// by pid (SIGTERM, then SIGKILL after a grace period), waits for them and
// removes a temp run dir. It is idempotent and safe after a failed Start.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.end()
		s.wg.Wait()
		var errs []error
		if s.lb != nil {
			errs = append(errs, s.lb.stop())
		}
		appErrs := make([]error, len(s.instances))
		var wg sync.WaitGroup
		for i, in := range s.instances {
			if p := in.current(); p != nil {
				wg.Go(func() { appErrs[i] = p.stop(stopGrace) })
			}
		}
		wg.Wait()
		errs = append(errs, appErrs...)
		if s.redisProxy != nil {
			errs = append(errs, s.redisProxy.Close())
		}
		for _, p := range s.masterProxies {
			errs = append(errs, p.Close())
		}
		if s.redis != nil {
			errs = append(errs, s.redis.Stop())
		}
		errs = append(errs, s.stopMasters())
		if s.rmDir {
			errs = append(errs, os.RemoveAll(s.dir))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
