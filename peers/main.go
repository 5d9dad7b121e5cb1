// Command peers measures the lab's locks against two published Go Redis
// locks, go-redsync/redsync v4 and bsm/redislock, in one run, against one
// redis-server it starts itself on a free loopback port, plus five
// independent masters for the Redlock contenders (redsync over all five,
// with its defaults, and the lab's redlock).
//
// Every contender runs the same critical section, the articles' /testLock:
// take the lock, GET a counter, SET it one higher, give the lock up. N
// operations are spread over C goroutines (the ab -n 5000 -c 100 shape). A
// row reports operations per second, the latency of one operation (from
// asking for the lock to having released it: p50, p99, max), how many
// failed to get the lock within the bound, Redis round trips per
// operation, and whether the counter ends equal to the successes (exact).
//
// The library contenders include the lab's library rungs (lock/lib_*.go)
// as the app serves them. Then the same run starts a stack (three app
// instances behind nginx) and runs bench.Run on /testLock for -lb-locks,
// their rows in the same table, via nginx.
//
// It is its own Go module so that the lab does not depend on its peers.
//
//	go run . -n 5000 -c 100 -out ../results
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/redisfam"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// config is one run's sizes and bounds.
type config struct {
	n, c     int
	ttl      time.Duration // every lock's lease
	bound    time.Duration // how long one operation may wait for its lock
	retry    time.Duration // the fixed sleep of redsync, redislock and lua-fixed
	pipeline bool          // lua and fair release in the pipeline of the SET
	password string        // every Redis server's, made for this run
}

// options are the rest of the command line.
type options struct {
	out, only           string
	embedded            bool
	cpuprofile, profile string
	// app and nginxConf are the app binary and nginx.conf the stack of
	// the through-nginx part runs; lbLocks its locks ("": no such part).
	app, nginxConf, lbLocks string
	commit                  string // the lab's commit, for the report
}

func parseFlags() (config, options, error) {
	var (
		cfg config
		o   options
	)
	flag.StringVar(&o.out, "out", "results", "directory for peers-<time>.md and .json (\"\": none)")
	flag.StringVar(&o.only, "only", "", "comma-separated contenders to run (default: all)")
	flag.BoolVar(&o.embedded, "embedded", false, "allow the embedded miniredis when redis-server is not installed (its figures mean little)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the -profile contender's run to this file")
	flag.StringVar(&o.profile, "profile", "fair", "which contender -cpuprofile profiles")
	flag.StringVar(&o.app, "app", "../bin/app", "the app binary the through-nginx part's stack runs (make build)")
	flag.StringVar(&o.nginxConf, "nginx-conf", "../nginx.conf", "the nginx.conf that stack derives its own from")
	flag.StringVar(&o.lbLocks, "lb-locks", "redsync,redsync-redlock,redislock,rueidislock,pg-advisory,pg-advisory-xact,pg-advisory-fenced,lua,fair,cohort,atomic", "the app's locks to run through the load balancer after the direct runs (\"\": none)")
	flag.StringVar(&o.commit, "commit", "", "the lab's commit, named in the report")
	flag.IntVar(&cfg.n, "n", 5000, "operations per contender")
	flag.IntVar(&cfg.c, "c", 100, "concurrent goroutines")
	flag.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "lock lease")
	flag.DurationVar(&cfg.bound, "bound", 30*time.Second, "how long one operation may wait for its lock before it counts as failed")
	flag.DurationVar(&cfg.retry, "retry", 10*time.Millisecond, "fixed retry sleep of redsync, redislock and lua-fixed")
	flag.BoolVar(&cfg.pipeline, "pipeline", true, "the lab's lua and fair locks release in the same pipeline as the SET")
	flag.Parse()
	if flag.NArg() > 0 || cfg.n <= 0 || cfg.c <= 0 {
		return cfg, o, fmt.Errorf("usage: peers [-n N] [-c C] [-out DIR] [-only a,b]")
	}
	return cfg, o, nil
}

func run() error {
	cfg, o, err := parseFlags()
	if err != nil {
		return err
	}
	pg := &pgServer{requireReal: !o.embedded}
	defer pg.close()
	all := contenders(cfg, pg)
	if o.only != "" {
		want := strings.Split(o.only, ",")
		all = slices.DeleteFunc(all, func(c contender) bool { return !slices.Contains(want, c.name) })
		if len(all) == 0 {
			return fmt.Errorf("-only %q names no contender", o.only)
		}
	}

	ctx := context.Background()
	mode := stack.Real
	if o.embedded {
		mode = stack.Auto
	}
	// Nobody else on the host may read or write the servers of the run.
	cfg.password = backends.NewPassword()
	srv, err := redisfam.StartAuth(ctx, "127.0.0.1:0", mode, !o.embedded, cfg.password, nil)
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer srv.Stop()
	version := "redis-server"
	if srv.Embedded() {
		version = "embedded miniredis"
	} else if v, err := redisVersion(ctx, srv.Addr(), cfg.password); err == nil {
		version = "redis-server " + v
	}
	masters, err := startMasters(ctx, mode, !o.embedded, cfg.password)
	if err != nil {
		return err
	}
	defer func() {
		for _, m := range masters {
			m.Stop()
		}
	}()
	var masterAddrs []string
	for _, m := range masters {
		masterAddrs = append(masterAddrs, m.Addr())
	}

	started := time.Now()
	fmt.Printf("%d operations, %d concurrent, one %s at %s (and %d masters for the Redlocks), %s %s/%s, %d CPUs; lease %s, bound %s\n\n",
		cfg.n, cfg.c, version, srv.Addr(), len(masters), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cfg.ttl, cfg.bound)
	var rows []row
	for _, ct := range all {
		var stop func()
		if o.cpuprofile != "" && ct.name == o.profile {
			if stop, err = startProfile(o.cpuprofile); err != nil {
				return err
			}
		}
		r, err := measure(ctx, srv.Addr(), srv.Pid(), masterAddrs, cfg, ct)
		if stop != nil {
			stop()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", ct.name, err)
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "  %s done\n", ct.name)
	}

	var lbSummary []string
	if o.lbLocks != "" {
		fmt.Fprintf(os.Stderr, "  through the load balancer: %s\n", o.lbLocks)
		lbRows, summary, err := viaLB(ctx, cfg, o, mode, strings.Split(o.lbLocks, ","))
		if err != nil {
			return fmt.Errorf("through the load balancer: %w", err)
		}
		rows, lbSummary = append(rows, lbRows...), summary
	}

	rep := report{
		Started: started.UTC().Format(time.RFC3339), Commit: o.commit, Stack: lbSummary,
		Redis: version, Go: runtime.Version(),
		CPUs: runtime.NumCPU(), N: cfg.n, C: cfg.c, TTL: cfg.ttl.String(), Bound: cfg.bound.String(),
		Rows: rows,
	}
	table := rep.markdown()
	fmt.Print(table)
	return rep.write(o.out, started, table)
}
