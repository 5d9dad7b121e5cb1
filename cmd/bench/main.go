// Command bench replays `ab -n 5000 -c 100` against every lock through the
// load balancer and judges each run from the counters it reads back.
//
// With no -url it targets the local stack (http://127.0.0.1:LB_PORT); if
// nothing answers there it starts one for the run and stops it after.
//
// With -matrix it runs the strategies x scenarios matrix instead: each
// scenario of docs/scenarios.md on a fresh stack of its own on free
// loopback ports (never the ports of a running `make up`), each lock the
// ladder gives a verdict for there, then prints the grid of verdicts
// against the ladder's and writes results/matrix-*.{json,md}.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		// The bench package's errors say "bench: " already.
		fmt.Fprintln(os.Stderr, "bench:", strings.TrimPrefix(err.Error(), "bench: "))
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	url := fs.String("url", "", "load balancer to target (default: the local stack on -lb-port, started if nothing answers)")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback -url (docker compose); load never leaves this machine otherwise")
	matrix := fs.Bool("matrix", false, "run the strategies x scenarios matrix, each scenario on a fresh stack on free ports (-url and the ports are not used)")
	verbose := fs.Bool("v", false, "with -matrix: show each stack's log (starts, crashes, restarts, masters)")
	scenarios := fs.String("scenarios", "", "with -matrix: comma-separated scenarios (default all: "+strings.Join(suite.ScenarioNames(), ",")+")")
	chaos := fs.Bool("chaos", false, "run the fault suite (kill, drain, Redis stop, retry trap, failover, partition, random repeats), each fault on a fresh stack on free ports")
	faults := fs.String("faults", "", "with -chaos: comma-separated fault numbers, 1 to 7 (default all)")
	repeats := fs.Int("repeats", suite.DefaultRepeats, "with -chaos: runs of each schedule in fault 7")
	trials := fs.Int("trials", suite.DefaultTrials, "with -chaos: failover trials per lock in fault 5")
	seed := fs.Uint64("seed", 0, "with -chaos: seed of fault 7's random timing (default: from the clock, printed)")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *chaos {
		for _, f := range []string{"url", "matrix", "wait", "scenarios", "endpoints"} {
			if set[f] {
				return fmt.Errorf("-chaos takes no -%s: it starts a stack per fault and loads /sale", f)
			}
		}
		var nums []int
		for _, f := range cli.Split(*faults) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("-faults: %q is not a fault number (1 to 7)", f)
			}
			nums = append(nums, n)
		}
		return runChaos(ctx, so, bo, set, suite.ChaosConfig{Faults: nums, Repeats: *repeats, Trials: *trials, Seed: *seed}, *verbose)
	}
	for _, f := range []string{"faults", "repeats", "trials", "seed"} {
		if set[f] {
			return fmt.Errorf("-%s needs -chaos", f)
		}
	}
	if *matrix {
		if set["url"] {
			return errors.New("-matrix starts a stack per scenario: it takes no -url")
		}
		if set["wait"] {
			return errors.New("-matrix takes no -wait: its requests wait as docs/scenarios.md says")
		}
		return runMatrix(ctx, so, bo, cli.Split(*scenarios), set["endpoints"], *verbose)
	}
	if set["scenarios"] || set["v"] {
		return errors.New("-scenarios and -v need -matrix")
	}
	cfg := bo.Config
	cfg.AllowRemote = *allowRemote
	cfg.URL = *url
	var notes []string
	if cfg.URL == "" {
		cfg.URL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(so.LBPort))
		if healthy(ctx, cfg.URL, false) != nil {
			fmt.Fprintf(os.Stderr, "bench: nothing answers at %s: starting a stack for this run\n", cfg.URL)
			so.Config.Dir = "" // a temporary run dir, removed with the stack
			s, err := stack.Start(ctx, so.Config)
			if err != nil {
				return err
			}
			defer func() {
				if err := s.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, "bench: stopping the stack:", err)
				}
			}()
			cfg.URL = s.URL()
			cfg.Instances = s.InstanceURLs()
			notes = s.Summary()
		} else {
			// make up's stack: its instances are where these flags put them.
			cfg.Instances = so.Config.InstanceURLs()
		}
	} else if err := healthy(ctx, cfg.URL, cfg.AllowRemote); err != nil {
		return fmt.Errorf("nothing healthy answers at %s/healthz: %w", cfg.URL, err)
	}
	fmt.Printf("benchmark: %d requests at %d concurrent per run, stock %d, through %s\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock, cfg.URL)
	_, err = bench.Compare(ctx, cfg, bo.Out, notes, os.Stdout)
	return err
}

// runChaos runs the fault suite with the stack flags as its template; -n,
// -c, -stock and -locks only when given (the suite has its own sizes).
func runChaos(ctx context.Context, so cli.StackOptions, bo cli.BenchOptions, set map[string]bool, cfg suite.ChaosConfig, verbose bool) error {
	tmpl := so.Config
	tmpl.Dir = ""
	if !verbose {
		tmpl.Log = nil
	}
	cfg.Stack, cfg.RequireReal, cfg.Progress, cfg.Timeout = tmpl, tmpl.RequireReal, bo.Config.Progress, bo.Config.Timeout
	if set["n"] {
		cfg.Requests = bo.Config.Requests
	}
	if set["c"] {
		cfg.Concurrency = bo.Config.Concurrency
	}
	if set["stock"] {
		cfg.Stock = bo.Config.Stock
	}
	if set["locks"] {
		cfg.Locks = bo.Config.Locks
	}
	fmt.Println("fault suite: each fault on a fresh stack on free loopback ports")
	_, err := suite.CompareChaos(ctx, cfg, bo.Out, os.Stdout)
	return err
}

// runMatrix runs the matrix with the stack flags as its template: the
// app binary, nginx.conf, the Redis and LB modes, -masters, the app flags
// after the flags. Only /sale unless -endpoints was given.
func runMatrix(ctx context.Context, so cli.StackOptions, bo cli.BenchOptions, scenarios []string, endpointsSet, verbose bool) error {
	tmpl := so.Config
	tmpl.Dir = "" // a temporary run dir per scenario, never .run
	if !verbose {
		tmpl.Log = nil // the progress lines say what runs; the reports name the stack
	}
	cfg := suite.MatrixConfig{
		Scenarios:   scenarios,
		Locks:       bo.Config.Locks,
		Requests:    bo.Config.Requests,
		Concurrency: bo.Config.Concurrency,
		Stock:       bo.Config.Stock,
		Timeout:     bo.Config.Timeout,
		Stack:       tmpl,
		RequireReal: tmpl.RequireReal,
		Progress:    bo.Config.Progress,
	}
	if endpointsSet {
		cfg.Endpoints = bo.Config.Endpoints
	}
	for _, s := range scenarios {
		if _, err := suite.LookupScenario(s); err != nil {
			return err
		}
	}
	fmt.Printf("matrix: %d requests at %d concurrent per run, stock %d, each scenario on a fresh stack\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock)
	_, _, err := suite.CompareMatrix(ctx, cfg, bo.Out, os.Stdout)
	return err
}

// healthy asks GET url/healthz, for at most 2s.
func healthy(ctx context.Context, url string, allowRemote bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return bench.Healthz(ctx, url, allowRemote)
}
