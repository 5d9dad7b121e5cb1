// Package cli holds the command-line flags that cmd/stack and cmd/bench
// share, so both describe the stack and the benchmark in the same words.
package cli

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/appwire"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
)

// StackOptions is a parsed stack command line.
type StackOptions struct {
	Config stack.Config
	Dir    string // run dir (.run under the repo root)
	State  string // Dir/stack.json
	LBPort int
}

// StackFlags registers the stack's flags on fs; after fs.Parse, the
// returned function builds the options, with appArgs for every instance.
func StackFlags(fs *flag.FlagSet) func(appArgs []string) (StackOptions, error) {
	var (
		o         StackOptions
		redisPort = fs.Int("redis-port", 6380, "Redis port on 127.0.0.1 (0: a free port)")
		redisMode = fs.String("redis", "auto", "Redis: auto (redis-server if on PATH, else embedded), real or embedded (miniredis in this process)")
		lbMode    = fs.String("lb", "auto", "load balancer: auto (nginx if on PATH, else builtin), nginx or builtin (Go reverse proxy in this process)")
		cluster   = fs.Int("cluster", 0, "run a Redis Cluster of this many masters (3 or more), each with a replica, in place of one Redis, on the ports from -redis-port upward (needs redis-server; 0: one Redis)")
		masters   = fs.Int("masters", stack.DefaultMasters, "Redlock masters for the redlock rung: independent Redis servers on free ports, real or embedded as -redis (0: none)")
		zkMode    = fs.String("zookeeper", "auto", "ZooKeeper for the zookeeper rung: auto (if installed, else the rung answers 503), real or off")
		dbMode    = fs.String("mariadb", "auto", "MariaDB for the db-for-update and db-optimistic rungs: auto (if installed, else they answer 503), real or off")
		pgMode    = fs.String("postgres", "auto", "PostgreSQL for the pg-advisory rungs: auto (if installed, else they answer 503), real or off")
		etcdMode  = fs.String("etcd", "auto", "etcd for the etcd rung: auto (the etcd binary if on PATH, else embedded), real, embedded or off")
		data      = fs.String("data", "auto", "where ZooKeeper, etcd and MariaDB keep their data: memory (tmpfs in /dev/shm: their fsyncs cost no disk flush; a killed process loses nothing), disk (the run dir: each lock pays the disk's fsync), or auto (memory where /dev/shm has 1 GiB free)")
	)
	fs.IntVar(&o.LBPort, "lb-port", 8080, "load balancer port on 127.0.0.1 (0 with -app-port 0: free ports for all)")
	fs.StringVar(&o.Dir, "dir", repoPath(".run"), "run dir: logs, derived nginx.conf, state file")
	fs.IntVar(&o.Config.Instances, "instances", stack.DefaultInstances, "number of app instances")
	fs.IntVar(&o.Config.AppBasePort, "app-port", stack.DefaultAppBasePort, "first app port; instances listen on it and the ports after it")
	fs.StringVar(&o.Config.AppBinary, "app", repoPath("bin", "app"), "app binary (go build -o bin/app ./cmd/app)")
	fs.StringVar(&o.Config.NginxConf, "nginx-conf", repoPath("nginx.conf"), "nginx.conf to derive the loopback config from")
	return func(appArgs []string) (StackOptions, error) {
		o.Config.AppArgs = appArgs
		o.Config.LBAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(o.LBPort))
		o.Config.RedisAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(*redisPort))
		if err := checkStack(o, *redisPort, *masters, *cluster); err != nil {
			return o, err
		}
		if err := checkAppArgs(appArgs); err != nil {
			return o, err
		}
		if *masters == 0 {
			o.Config.Masters = -1 // stack.Config's "none"
		} else {
			o.Config.Masters = *masters
		}
		if *cluster > 0 && *redisMode == "embedded" {
			return o, bound.Usagef("-cluster needs redis-server: the embedded miniredis (-redis embedded) has no cluster mode")
		}
		o.Config.Cluster = *cluster
		switch *redisMode {
		case "auto", "real", "embedded":
			o.Config.Redis = stack.Mode(*redisMode)
		default:
			return o, bound.Usagef("-redis %q: want auto, real or embedded", *redisMode)
		}
		for _, b := range []struct {
			flag, value string
			modes       []stack.Mode
			to          *stack.Mode
		}{
			{"zookeeper", *zkMode, []stack.Mode{stack.Auto, stack.Real, stack.Off}, &o.Config.ZooKeeper},
			{"mariadb", *dbMode, []stack.Mode{stack.Auto, stack.Real, stack.Off}, &o.Config.MariaDB},
			{"etcd", *etcdMode, []stack.Mode{stack.Auto, stack.Real, stack.Embedded, stack.Off}, &o.Config.Etcd},
			{"postgres", *pgMode, []stack.Mode{stack.Auto, stack.Real, stack.Off}, &o.Config.Postgres},
		} {
			if !slices.Contains(b.modes, stack.Mode(b.value)) {
				return o, bound.Usagef("-%s %q: want one of %v", b.flag, b.value, b.modes)
			}
			*b.to = stack.Mode(b.value)
		}
		switch *lbMode {
		case "auto":
			o.Config.LB = stack.Auto
		case "nginx", "real":
			o.Config.LB = stack.Real
		case "builtin", "embedded":
			o.Config.LB = stack.Embedded
		default:
			return o, bound.Usagef("-lb %q: want auto, nginx or builtin", *lbMode)
		}
		switch *data {
		case "auto":
		case stack.DataMemory, stack.DataDisk:
			o.Config.Data = *data
		default:
			return o, bound.Usagef("-data %q: want auto, memory or disk", *data)
		}
		o.Config.Dir = o.Dir
		o.Config.RequireReal = os.Getenv("CI") == "true"
		o.Config.Races = func(lb string, s *stack.Stack) http.Handler { return race.New(lb, s) }
		o.Config.Log = os.Stderr
		o.State = filepath.Join(o.Dir, "stack.json")
		return o, nil
	}
}

// checkStack refuses the stack's counts and ports outside their bounds.
func checkStack(o StackOptions, redisPort, masters, cluster int) error {
	if cluster != 0 {
		if err := bound.IntIn("cluster", cluster, 3, bound.MaxCluster); err != nil {
			return bound.Usagef("%v (or 0: one Redis)", err)
		}
	}
	if err := bound.First(
		bound.Dir("dir", o.Dir),
		bound.IntIn("instances", o.Config.Instances, 1, bound.MaxInstances),
		bound.IntIn("masters", masters, 0, bound.MaxMasters),
		bound.Port("redis-port", redisPort, true),
		bound.Port("lb-port", o.LBPort, true),
		bound.Port("app-port", o.Config.AppBasePort, true),
	); err != nil {
		return err
	}
	if p := o.Config.AppBasePort; p != 0 && p+o.Config.Instances-1 > 65535 {
		return bound.Usagef("-app-port %d: the %d instances' ports go past 65535", p, o.Config.Instances)
	}
	if cluster > 0 && redisPort != 0 && redisPort+2*cluster-1+10000 > 65535 {
		return bound.Usagef("-redis-port %d: the cluster's %d nodes' ports, and their bus ports 10000 higher, go past 65535", redisPort, 2*cluster)
	}
	return checkClash(o, redisPort, cluster)
}

// span is the ports one flag's servers take.
type span struct {
	flag   string
	lo, hi int
	what   string
}

// checkClash refuses two flags whose servers would take one port (a
// port 0 is a free one: it clashes with nothing), before anything
// starts: found when the second server could not listen, it cost the
// start of every server before it.
func checkClash(o StackOptions, redisPort, cluster int) error {
	spans := []span{
		{"lb-port", o.LBPort, o.LBPort, "the load balancer's port"},
		{"app-port", o.Config.AppBasePort, o.Config.AppBasePort + o.Config.Instances - 1,
			fmt.Sprintf("the %d instances' ports", o.Config.Instances)},
	}
	if cluster > 0 {
		n := 2 * cluster
		spans = append(spans, span{"redis-port", redisPort, redisPort + n - 1, fmt.Sprintf("the cluster's %d nodes' ports", n)},
			span{"redis-port", redisPort + 10000, redisPort + 10000 + n - 1, fmt.Sprintf("the cluster's %d bus ports", n)})
	} else {
		spans = append(spans, span{"redis-port", redisPort, redisPort, "Redis's port"})
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.lo == 0 || b.lo == 0 || a.flag == b.flag || a.hi < b.lo || b.hi < a.lo {
				continue
			}
			return bound.Usagef("-%s and -%s clash: %s (%s) and %s (%s) overlap; give each its own",
				a.flag, b.flag, a.what, ports(a), b.what, ports(b))
		}
	}
	return nil
}

func ports(s span) string {
	if s.lo == s.hi {
		return strconv.Itoa(s.lo)
	}
	return fmt.Sprintf("%d to %d", s.lo, s.hi)
}

// checkAppArgs checks the app flags given after -- as every instance
// will (appwire.ParseFlags), before any server starts.
func checkAppArgs(args []string) error {
	if len(args) == 0 {
		return nil
	}
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := appwire.ParseFlags(fs, args); err != nil {
		return bound.Usagef("app flags after --: %w", err)
	}
	return nil
}

// AppArgs is what follows -- on a command line args that fs parsed: the
// app flags. A word before it that is no flag is refused: flag parsing
// stops at the first such word, and every flag after it would be
// dropped without a word (`stack run stray -dir X` ran in .run).
func AppArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, nil
	}
	if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
		return rest, nil
	}
	return nil, bound.Usagef("unexpected argument %q: this command's flags start with -, and the app's go after --", rest[0])
}

// BenchOptions is a parsed benchmark command line.
type BenchOptions struct {
	Config bench.Config
	Out    string // reports folder
}

// benchFlags registers the benchmark's flags on fs; after fs.Parse, the
// returned function builds the options.
func benchFlags(fs *flag.FlagSet) func() (BenchOptions, error) {
	var (
		o         BenchOptions
		locks     = fs.String("locks", "", "comma-separated locks to run (default: every lock GET /strategies lists)")
		endpoints = fs.String("endpoints", "sale,testLock", "comma-separated endpoints to load")
	)
	fs.IntVar(&o.Config.Requests, "n", bench.DefaultRequests, "requests per run (ab -n)")
	fs.IntVar(&o.Config.Concurrency, "c", bench.DefaultConcurrency, "concurrent closed-loop workers (ab -c)")
	fs.IntVar(&o.Config.Stock, "stock", bench.DefaultStock, "stock set before each run")
	fs.IntVar(&o.Config.SKUs, "skus", 0, "spread each run over items 1..K (sku=), each with -stock and judged on its own (default 0: the lab's one item)")
	fs.DurationVar(&o.Config.Timeout, "timeout", bench.DefaultTimeout, "timeout of each request")
	fs.StringVar(&o.Config.Wait, "wait", "", "how requests wait for a busy lock, sent to every lock that takes it: queue, fixed (the articles' sleep), backoff, notify, relay or cohort (redlock) (default: each lock's own, or the app's -wait)")
	defaultOut := repoPath("results")
	fs.StringVar(&o.Out, "out", defaultOut, "folder for the JSON and Markdown reports")
	return func() (BenchOptions, error) {
		o.Config.Locks = Split(*locks)
		o.Config.Endpoints = Split(*endpoints)
		if err := bound.First(
			bound.IntIn("n", o.Config.Requests, 1, bound.MaxRequests),
			bound.IntIn("c", o.Config.Concurrency, 1, bound.MaxConcurrency),
			bound.IntIn("stock", o.Config.Stock, 1, bound.MaxStock),
			bound.IntIn("skus", o.Config.SKUs, 0, min(bench.MaxSKUs, o.Config.Requests)),
			bound.Duration("timeout", o.Config.Timeout, bound.MaxTimeout),
			bound.Dir("out", o.Out),
		); err != nil {
			return o, err
		}
		if o.Config.Wait != "" {
			if _, err := lock.ParseWaitMode(o.Config.Wait); err != nil {
				return o, bound.Usagef("-wait: %w", err) // before any stack starts
			}
		}
		o.Config.Progress = os.Stderr
		// Under docker compose the run guard's key is the apps' Redis
		// password, in the bench's environment as in theirs; a local
		// stack's is its run dir's (suite.CompareLocal).
		o.Config.RunKey = os.Getenv(appwire.PasswordEnv)
		return o, nil
	}
}

// ParseStackBench adds the stack's and the benchmark's flags to fs (which
// may already hold a command's own), parses args, and builds both; what
// follows -- goes to every app instance.
func ParseStackBench(fs *flag.FlagSet, args []string) (StackOptions, BenchOptions, error) {
	finishStack := StackFlags(fs)
	finishBench := benchFlags(fs)
	if err := fs.Parse(args); err != nil {
		return StackOptions{}, BenchOptions{}, bound.Usage(err)
	}
	appArgs, err := AppArgs(fs, args)
	if err != nil {
		return StackOptions{}, BenchOptions{}, err
	}
	so, err := finishStack(appArgs)
	if err != nil {
		return so, BenchOptions{}, err
	}
	bo, err := finishBench()
	return so, bo, err
}

// Split parses a comma-separated flag value, dropping blanks.
func Split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// repoPath is stack.RepoPath shortened relative to the working directory
// when it is under it, for readable flag defaults.
func repoPath(elem ...string) string {
	p := stack.RepoPath(elem...)
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
