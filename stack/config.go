package stack

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// Mode selects a real binary or its in-process stand-in (see proc.Mode).
type Mode = proc.Mode

const (
	// Auto uses the real binary when it is on PATH, else the stand-in
	// (or fails when Config.RequireReal is set).
	Auto = proc.Auto
	// Real requires the binary: redis-server, or nginx for the LB.
	Real = proc.Real
	// Embedded uses miniredis for Redis, the built-in Go proxy for the LB.
	Embedded = proc.Embedded
)

// Defaults for Config: what its zero fields mean, named so that flags
// (internal/cli) and docs can say so.
const (
	DefaultInstances   = 3
	DefaultLBAddr      = "127.0.0.1:8080"
	DefaultAppBasePort = 8081
	DefaultRedisAddr   = "127.0.0.1:6380"
)

// Config describes a stack. The zero value means the defaults below.
type Config struct {
	Dir         string    // run dir: derived nginx conf, logs, pid files; "" = a new temp dir removed on Stop
	Instances   int       // default 3
	LBAddr      string    // default 127.0.0.1:8080; "127.0.0.1:0" = pick a free port
	AppBasePort int       // default 8081, instances on base, base+1, ...; 0 with LBAddr port 0 => free ports
	RedisAddr   string    // default 127.0.0.1:6380; port 0 = free port
	Redis       Mode      // Auto: real redis-server if on PATH else embedded miniredis
	LB          Mode      // Auto: nginx if on PATH else built-in Go reverse proxy
	RequireReal bool      // Auto with a missing binary is an error, never a fallback (set it when CI=true)
	AppBinary   string    // the built app binary; default bin/app in the repo root
	AppArgs     []string  // extra flags passed to every instance (e.g. -lock-ttl 2s)
	NginxConf   string    // the project's nginx.conf to derive from; default nginx.conf in the repo root
	Log         io.Writer // human progress lines; nil = discard

	// Races, when set, serves /race at the load balancer's address from
	// this process (see package race), given the balancer's base URL and
	// the stack, whose instances are up (its load balancer is not yet);
	// nil: /race goes to the instances, which answer 404.
	Races func(lb string, s *Stack) http.Handler

	// InstanceArgs are extra flags for instance i (0-based) only, after
	// AppArgs, kept across the supervisor's restarts: {2: {"-clock-skew",
	// "2s"}} skews app3's clock.
	InstanceArgs map[int][]string

	// ZooKeeper, MariaDB and Etcd are the back ends of the rungs that are
	// not Redis's (zookeeper; db-for-update and db-optimistic; etcd).
	// "" or Off: not started, and those rungs answer 503. Auto: started
	// when installed (etcd: the binary when on PATH, else embedded in this
	// process); a missing one is left out, and logged, unless RequireReal.
	// Real: required. Embedded: etcd in this process.
	ZooKeeper, MariaDB, Etcd Mode
	// Postgres is PostgreSQL, the back end of pg-advisory and
	// pg-advisory-xact: Auto, Real or Off, as MariaDB.
	Postgres Mode

	// Data is where those back ends keep their data: proc.DataMemory (a
	// tmpfs dir of the stack's own in /dev/shm, removed by Stop),
	// proc.DataDisk (the run dir), or "": memory where /dev/shm is a tmpfs
	// with 1 GiB free, else disk, saying why.
	Data string

	// Masters is the number of Redlock masters: independent Redis servers
	// on free ports of RedisAddr's host, each started as Redis is (same
	// mode, same RequireReal rule). Every instance gets their addresses as
	// -masters a,b,... and in REDLOCK_MASTERS. 0 means DefaultMasters; a
	// negative number, none.
	Masters int

	// Cluster, when > 0, runs a Redis Cluster of that many masters (3 or
	// more) with one replica each in place of the one Redis: redis-server
	// in cluster mode on consecutive ports from RedisAddr's upward (a
	// free run of ports when it is 0), and the instances get its nodes as
	// -redis-cluster. Needs redis-server (miniredis has no cluster mode).
	// StopRedis, StartRedis and RedisProxy are the one Redis's: not on a
	// cluster.
	Cluster int

	// MastersAOF starts the Redlock masters with an append-only file
	// fsynced before every answer (appendonly yes, appendfsync always),
	// each in a directory of its own under the run dir: a master that
	// crashes (CrashMaster) comes back with the locks it granted. This is
	// the persistence Redlock's author asks of its masters. Needs
	// redis-server.
	MastersAOF bool

	// StartTimeout bounds, when Start's ctx has no deadline, each
	// server's wait to serve, from its process's start (a Redis
	// Cluster's: all its nodes'); default 30s. What a start does before
	// (PostgreSQL's initdb, MariaDB's install) is work, not a wait: it
	// is not timed (proc.LaunchWithin), and ends with ctx.
	StartTimeout time.Duration

	// StableAfter is how long a restarted instance must run before its
	// restart backoff (100ms, doubling to 5s while it keeps crashing)
	// starts over; default 10s. The fault suite, which kills instances on
	// purpose every few seconds, shortens it.
	StableAfter time.Duration

	// RedisProxy puts a FaultProxy between the instances and the main
	// Redis: they get its address as -redis, so that a test can delay
	// Redis's replies or cut the network (Stack.RedisProxy) without
	// touching the server. RedisAddr stays the server's own address. The
	// proxy dials Redis per connection, so it survives StopRedis and
	// StartRedis.
	RedisProxy bool

	// MasterProxies puts a FaultProxy of its own between the instances and
	// each Redlock master (Stack.MasterProxy): the instances get the
	// proxies' addresses as -masters and in REDLOCK_MASTERS, while
	// MasterAddrs stays the masters' own. A cut there is a master that
	// times out, where StopMaster is one that refuses.
	MasterProxies bool
}

// RealRedis reports whether Start would run redis-server for Redis and
// the masters (Redis Real, or Auto with redis-server on PATH), not
// miniredis.
func (c Config) RealRedis() bool {
	real, _, err := proc.ResolveMode(c.Redis, "redis-server", false)
	return err == nil && real
}

// appPorts returns the instances' ports, or nil when they are to be free
// ports picked at start.
func (c *Config) appPorts() []string {
	_, lbPort, _ := net.SplitHostPort(c.LBAddr)
	if lbPort == "0" && c.AppBasePort == 0 {
		return nil
	}
	base := c.AppBasePort
	if base == 0 {
		base = DefaultAppBasePort
	}
	n := c.Instances
	if n <= 0 {
		n = DefaultInstances
	}
	ports := make([]string, n)
	for i := range ports {
		ports[i] = strconv.Itoa(base + i)
	}
	return ports
}

// InstanceURLs are the base URLs the instances of a stack started with c
// listen on, when c fixes their ports (nil when they are picked free): a
// stack already up (make up) is found there.
func (c Config) InstanceURLs() []string {
	var urls []string
	for _, p := range c.appPorts() {
		urls = append(urls, "http://"+net.JoinHostPort("127.0.0.1", p))
	}
	return urls
}

// checkPortsFree fails if a fixed port of the stack is already in use.
func checkPortsFree(c Config) error {
	addrs := []string{c.RedisAddr, c.LBAddr}
	if host, port, _ := net.SplitHostPort(c.RedisAddr); c.Cluster > 0 && port != "0" {
		base, _ := strconv.Atoi(port)
		for i := range 2 * c.Cluster {
			addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(base+i)), net.JoinHostPort(host, strconv.Itoa(base+i+redisfam.ClusterBusOffset)))
		}
	}
	for _, p := range c.appPorts() {
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", p))
	}
	for _, a := range addrs {
		if _, port, _ := net.SplitHostPort(a); port == "0" {
			continue
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("stack: %s is not free (another stack up? stop it with `go run ./cmd/stack down`): %w", a, err)
		}
		ln.Close()
	}
	return nil
}

func (c *Config) setDefaults() error {
	if c.Instances == 0 {
		c.Instances = DefaultInstances
	}
	if c.Instances < 0 {
		return fmt.Errorf("stack: Instances = %d", c.Instances)
	}
	for i := range c.InstanceArgs {
		if i < 0 || i >= c.Instances {
			return fmt.Errorf("stack: InstanceArgs for instance %d: instances are 0 to %d", i, c.Instances-1)
		}
	}
	if c.Masters == 0 {
		c.Masters = DefaultMasters
	}
	var err error
	if c.LBAddr, err = proc.Loopback(c.LBAddr, DefaultLBAddr); err != nil {
		return fmt.Errorf("stack: LBAddr: %w", err)
	}
	if c.RedisAddr, err = proc.Loopback(c.RedisAddr, DefaultRedisAddr); err != nil {
		return fmt.Errorf("stack: RedisAddr: %w", err)
	}
	if c.Redis == "" {
		c.Redis = Auto
	}
	if c.Cluster != 0 {
		switch {
		case c.Cluster < 3:
			return fmt.Errorf("stack: Cluster %d: a Redis Cluster needs at least 3 masters", c.Cluster)
		case c.Redis == Embedded:
			return errors.New("stack: a Redis Cluster needs redis-server: the embedded miniredis has no cluster mode")
		case c.RedisProxy:
			return errors.New("stack: RedisProxy stands in front of one Redis, not a cluster")
		}
	}
	if c.LB == "" {
		c.LB = Auto
	}
	if c.AppBinary == "" {
		c.AppBinary = RepoPath("bin", "app")
	}
	if c.NginxConf == "" {
		c.NginxConf = RepoPath("nginx.conf")
	}
	// Children run in the run dir: make the paths absolute now.
	if c.AppBinary, err = absBinary(c.AppBinary); err != nil {
		return fmt.Errorf("stack: AppBinary: %w", err)
	}
	if c.NginxConf, err = filepath.Abs(c.NginxConf); err != nil {
		return fmt.Errorf("stack: NginxConf: %w", err)
	}
	if c.StableAfter <= 0 {
		c.StableAfter = 10 * time.Second
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 30 * time.Second
	}
	return nil
}

// absBinary makes a binary path absolute; a bare name is looked up on PATH.
func absBinary(p string) (string, error) {
	if !strings.ContainsRune(p, filepath.Separator) {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		}
	}
	return filepath.Abs(p)
}

// RepoPath joins elem to the repo root: the nearest directory at or above
// the working directory holding go.mod (the working directory if none).
// The stack finds bin/app and nginx.conf there by default.
func RepoPath(elem ...string) string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join(elem...)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(append([]string{d}, elem...)...)
		}
		if filepath.Dir(d) == d {
			return filepath.Join(append([]string{wd}, elem...)...)
		}
	}
}
