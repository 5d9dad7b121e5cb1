package sentinel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/faultproxy"
	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"

	"github.com/redis/go-redis/v9"
)

// Defaults for Config.
const (
	DefaultMasterName      = "lockladder"
	DefaultDownAfter       = 400 * time.Millisecond
	DefaultFailoverTimeout = 6 * time.Second
)

// A Group always has this many sentinels, and this quorum.
const (
	Sentinels = 3
	Quorum    = 2
)

// Config describes a Group. The zero value means the
// defaults.
type Config struct {
	// Dir holds the servers' and sentinels' dirs, confs and logs; "" = a
	// new temp dir, removed by Stop.
	Dir string
	// Host is the loopback address everything listens on; default
	// 127.0.0.1. Every port is a free one.
	Host string
	// MasterName is the name the sentinels monitor the primary under;
	// default DefaultMasterName.
	MasterName string
	// DownAfter is the first sentinel's down-after-milliseconds: how long
	// the primary may not answer before it deems it down. The second
	// waits 5/4 of it, the third 5/2 (DownAfterOf): sentinels that all
	// see the primary die at the same instant all ask for votes at once,
	// each votes for itself, and nobody is elected until a retry after
	// twice FailoverTimeout; staggered, the third is still undecided when
	// the first two ask, and its vote elects one of them. Default
	// DefaultDownAfter.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout. It also bounds
	// how long the replica keeps replicating through ReplicationLink: a
	// sentinel that sees a replica replicate from another address than the
	// primary's points it at the primary itself (+fix-slave-config) this
	// long after it first saw it. Default DefaultFailoverTimeout.
	FailoverTimeout time.Duration
	// Log gets human progress lines; nil = discarded.
	Log io.Writer
	// Password is what the servers and the sentinels require of every
	// client (requirepass), what the replica and the sentinels log in to
	// the primary with (masterauth, sentinel auth-pass) and the sentinels
	// to each other (sentinel sentinel-pass): on a host shared by a class,
	// nobody else reads or writes the group's locks. "" = a new one made
	// for the group (Group.Password).
	Password string
}

// DownAfterOf is sentinel i's down-after-milliseconds: DownAfter,
// 5/4 of it, 5/2 of it (see DownAfter).
func (c Config) DownAfterOf(i int) time.Duration {
	d := c.withDefaults().DownAfter
	switch i {
	case 0:
		return d
	case 1:
		return d * 5 / 4
	default:
		return d * 5 / 2
	}
}

func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.MasterName == "" {
		c.MasterName = DefaultMasterName
	}
	if c.DownAfter <= 0 {
		c.DownAfter = DefaultDownAfter
	}
	if c.FailoverTimeout <= 0 {
		c.FailoverTimeout = DefaultFailoverTimeout
	}
	if c.Password == "" {
		c.Password = backends.NewPassword()
	}
	return c
}

// Group is a primary redis-server with one asynchronous replica
// and three redis-sentinel processes watching them, all on free loopback
// ports: the setup in which a lock granted by a single Redis can be lost
// on failover. The replica replicates through a FaultProxy in front of the
// primary (ReplicationLink), so that a test can cut replication, write to
// the primary, and kill it before the write has reached the replica.
// Clients find the primary through the sentinels (redis.NewFailoverClient
// with MasterName and SentinelAddrs), never through the link.
//
// Every server and sentinel requires the group's password (Password):
// clients say it in redis.FailoverOptions's Password and
// SentinelPassword.
//
// Nothing is persisted: a server that dies comes back empty, if at all.
// Every process is stopped by pid in Stop. Its methods are safe for
// concurrent use.
type Group struct {
	cfg   Config
	dir   string
	rmDir bool
	lg    *proc.Logger

	primary0, replica *redisfam.Server // as started
	link              *faultproxy.Proxy
	sentinels         []*sentinel

	mu       sync.Mutex
	current  *redisfam.Server          // the server believed primary; nil once killed, until WaitFailover finds the next
	killedAt time.Time                 // when KillPrimary last killed one
	killed   map[*redisfam.Server]bool // killed by KillPrimary

	stopOnce sync.Once
	stopErr  error
}

// Start starts a primary, its replica (REPLICAOF the primary
// through a FaultProxy), waits until the replica is in sync, then starts
// three sentinels monitoring the primary (quorum 2) and returns once every
// sentinel knows the primary, the replica (in sync, promotable) and the
// two other sentinels. It needs a real redis-server (Redis 7.0 or later);
// when none is on PATH the error wraps exec.ErrNotFound. The sentinels run
// redis-sentinel when it is on PATH, else redis-server --sentinel. A
// failed start stops whatever it started. Without a deadline in ctx, the
// start is bounded to 30s.
func Start(ctx context.Context, cfg Config) (_ *Group, err error) {
	cfg = cfg.withDefaults()
	if ip := net.ParseIP(cfg.Host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("stack: sentinels: host %q is not a loopback address", cfg.Host)
	}
	_, serverBin, err := proc.ResolveMode(proc.Real, "redis-server", true)
	if err != nil {
		return nil, fmt.Errorf("stack: sentinels: %w", err)
	}
	sentinelBin, sentinelArgs := serverBin, []string{"--sentinel"}
	if p, err := proc.LookPath("redis-sentinel"); err == nil {
		sentinelBin, sentinelArgs = p, nil
	}

	g := &Group{cfg: cfg, dir: cfg.Dir, lg: proc.NewLogger(cfg.Log), killed: map[*redisfam.Server]bool{}}
	if g.dir == "" {
		if g.dir, err = proc.TempDir("sentinel"); err != nil {
			return nil, fmt.Errorf("stack: sentinels: %w", err)
		}
		g.rmDir = true
		if err := proc.Reachable(g.dir); err != nil {
			os.RemoveAll(g.dir)
			return nil, fmt.Errorf("stack: sentinels: %w", err)
		}
	}
	defer func() {
		if err != nil {
			g.Stop()
		}
	}()
	ctx, cancel := proc.WithDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	began := time.Now()

	free := net.JoinHostPort(cfg.Host, "0")
	if g.primary0, err = redisfam.LaunchServer(ctx, free, proc.Real, true, g.subdir("primary"), cfg.Password, nil); err != nil {
		return nil, fmt.Errorf("stack: sentinels: primary: %w", err)
	}
	g.current = g.primary0
	if g.link, err = faultproxy.New(g.primary0.Addr()); err != nil {
		return nil, fmt.Errorf("stack: sentinels: replication link: %w", err)
	}
	if g.replica, err = redisfam.LaunchServer(ctx, free, proc.Real, true, g.subdir("replica"), cfg.Password, nil); err != nil {
		return nil, fmt.Errorf("stack: sentinels: replica: %w", err)
	}
	if err := g.replicate(ctx); err != nil {
		return nil, err
	}
	for i := range Sentinels {
		s := &sentinel{i: i, bin: sentinelBin, extra: sentinelArgs, cfg: cfg, primary: g.primary0.Addr(), dir: g.subdir(fmt.Sprintf("sentinel-%d", i))}
		if err := proc.Launch(ctx, s); err != nil {
			s.remove()
			return nil, err
		}
		g.sentinels = append(g.sentinels, s)
	}
	if err := g.waitReady(ctx); err != nil {
		return nil, err
	}
	g.lg.Printf("sentinels: %s %s: primary %s (pid %d), replica %s (pid %d) replicating via %s, sentinels %s (pids %s), quorum %d, down-after %s/%s/%s, failover-timeout %s; ready in %s",
		g.primary0.Kind(), cfg.MasterName, g.primary0.Addr(), g.primary0.Pid(), g.replica.Addr(), g.replica.Pid(), g.link.Addr(),
		strings.Join(g.SentinelAddrs(), ","), joinPids(g.sentinelPids()), Quorum, cfg.DownAfterOf(0), cfg.DownAfterOf(1), cfg.DownAfterOf(2), cfg.FailoverTimeout,
		time.Since(began).Round(time.Millisecond))
	return g, nil
}

// subdir makes dir/name for one server or sentinel.
func (g *Group) subdir(name string) string {
	d := filepath.Join(g.dir, name)
	os.MkdirAll(d, 0o755) // a failure shows when the server cannot write there
	return d
}

// groupClient is a client to one of the group's servers: no retries,
// short timeouts, the group's password.
func groupClient(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: password, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: 2,
	})
}

// replicate makes the replica a replica of the primary through the link
// and waits until it is in sync.
func (g *Group) replicate(ctx context.Context) error {
	p, r := groupClient(g.primary0.Addr(), g.cfg.Password), groupClient(g.replica.Addr(), g.cfg.Password)
	defer p.Close()
	defer r.Close()
	// The full sync starts at once instead of waiting 5s for more
	// replicas (diskless sync's default delay).
	if err := p.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		return fmt.Errorf("stack: sentinels: primary: %w", err)
	}
	host, port, _ := net.SplitHostPort(g.link.Addr())
	// Promotable: a priority of 0 would exclude it.
	if err := r.ConfigSet(ctx, "replica-priority", "100").Err(); err != nil {
		return fmt.Errorf("stack: sentinels: replica: %w", err)
	}
	if err := r.ReplicaOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("stack: sentinels: replica: REPLICAOF %s %s: %w", host, port, err)
	}
	var last string
	for {
		rinfo, err := redisfam.InfoFields(ctx, r, "replication")
		if err == nil {
			pinfo, perr := redisfam.InfoFields(ctx, p, "replication")
			err = perr
			last = fmt.Sprintf("replica: master_link_status:%s master_sync_in_progress:%s; primary: connected_slaves:%s slave0:%s",
				rinfo["master_link_status"], rinfo["master_sync_in_progress"], pinfo["connected_slaves"], pinfo["slave0"])
			if rinfo["master_link_status"] == "up" && rinfo["master_sync_in_progress"] == "0" &&
				rinfo["master_port"] == port && strings.Contains(pinfo["slave0"], "state=online") {
				return nil
			}
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: sentinels: replica %s not in sync with %s: %w (last: %s)%s",
				g.replica.Addr(), g.primary0.Addr(), ctx.Err(), last, proc.LogTail(g.replica.LogPath(), 1024))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitReady waits until every sentinel has the primary, knows the
// replica as a healthy replica and sees the other sentinels (CKQUORUM).
func (g *Group) waitReady(ctx context.Context) error {
	name, replica := g.cfg.MasterName, g.replica.Addr()
	check := func(s *sentinel) error {
		addr, err := s.c.GetMasterAddrByName(ctx, name).Result()
		if err != nil {
			return err
		}
		if got := net.JoinHostPort(addr[0], addr[1]); got != g.primary0.Addr() {
			return fmt.Errorf("primary %s, want %s", got, g.primary0.Addr())
		}
		reps, err := s.c.Replicas(ctx, name).Result()
		if err != nil {
			return err
		}
		found := false
		for _, r := range reps {
			if net.JoinHostPort(r["ip"], r["port"]) != replica {
				continue
			}
			found = true
			if r["flags"] != "slave" || r["master-link-status"] != "ok" {
				return fmt.Errorf("replica %s: flags %s, master-link-status %s", replica, r["flags"], r["master-link-status"])
			}
		}
		if !found {
			return fmt.Errorf("replica %s not known yet", replica)
		}
		if q, err := s.c.CkQuorum(ctx, name).Result(); err != nil {
			return err
		} else if !strings.HasPrefix(q, fmt.Sprintf("OK %d usable", Sentinels)) {
			return fmt.Errorf("CKQUORUM: %s", q)
		}
		return nil
	}
	for {
		var errs []error
		for _, s := range g.sentinels {
			if err := check(s); err != nil {
				errs = append(errs, fmt.Errorf("sentinel %s: %w", s.addr, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: sentinels not ready: %w: %w%s", ctx.Err(), errors.Join(errs...), proc.LogTail(g.sentinels[0].p.LogPath(), 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Password is what every server and sentinel of the group requires, for
// redis.FailoverOptions.Password and SentinelPassword.
func (g *Group) Password() string { return g.cfg.Password }

// MasterName is the name the sentinels know the primary by, for
// redis.FailoverOptions.MasterName.
func (g *Group) MasterName() string { return g.cfg.MasterName }

// SentinelAddrs are the sentinels' host:port addresses, for
// redis.FailoverOptions.SentinelAddrs.
func (g *Group) SentinelAddrs() []string {
	addrs := make([]string, len(g.sentinels))
	for i, s := range g.sentinels {
		addrs[i] = s.addr
	}
	return addrs
}

// ReplicaAddr is the address of the replica as started (the primary
// after a failover).
func (g *Group) ReplicaAddr() string { return g.replica.Addr() }

// ReplicationLink is the FaultProxy the replica replicates through: Cut
// it, and nothing the primary is sent afterwards reaches the replica.
// It carries replication for about FailoverTimeout after Start
// (see Config.FailoverTimeout).
func (g *Group) ReplicationLink() *faultproxy.Proxy { return g.link }

// Pids lists the live processes of the group, in this order: the
// primary and the replica as started (a killed one no longer), then the
// sentinels.
func (g *Group) Pids() []int {
	var pids []int
	g.mu.Lock()
	for _, r := range []*redisfam.Server{g.primary0, g.replica} {
		if r != nil && !g.killed[r] {
			pids = append(pids, r.Pid())
		}
	}
	g.mu.Unlock()
	return append(pids, g.sentinelPids()...)
}

func (g *Group) sentinelPids() []int {
	var pids []int
	for _, s := range g.sentinels {
		if !s.p.Exited() {
			pids = append(pids, s.p.Pid())
		}
	}
	return pids
}

func joinPids(ns []int) string {
	ss := make([]string, len(ns))
	for i, n := range ns {
		ss[i] = strconv.Itoa(n)
	}
	return strings.Join(ss, ",")
}

// Stop stops the sentinels first (so that none reconfigures what is
// being stopped), then the link and both servers, each by pid, and
// removes the group's dir when it made it. It is idempotent.
func (g *Group) Stop() error {
	g.stopOnce.Do(func() {
		var errs []error
		for _, s := range g.sentinels {
			errs = append(errs, s.Stop(), s.remove())
		}
		if g.link != nil {
			errs = append(errs, g.link.Close())
		}
		for _, r := range []*redisfam.Server{g.primary0, g.replica} {
			if r != nil {
				errs = append(errs, r.Stop())
			}
		}
		if g.rmDir {
			errs = append(errs, os.RemoveAll(g.dir))
		}
		errs = slices.DeleteFunc(errs, func(e error) bool { return e == nil })
		g.stopErr = errors.Join(errs...)
		g.lg.Printf("sentinels: stopped")
	})
	return g.stopErr
}
