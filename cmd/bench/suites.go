package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// runMatrix is bench matrix, with the stack flags as the template of each
// scenario's stack: the app binary, nginx.conf, the Redis and LB modes,
// -masters, the app flags after --. Only /sale unless -endpoints is given.
func runMatrix(ctx context.Context, args []string) error {
	fs := newFlags("matrix", "Every lock under each scenario of docs/scenarios.md, each scenario on a fresh stack on free ports;\n"+
		"a grid of verdicts against the ladder's and results/matrix-*.{html,json,md} (the HTML draws each failed run's timeline).")
	verbose := fs.Bool("v", false, "show each stack's log (starts, crashes, restarts, masters)")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios (default all: "+strings.Join(suite.ScenarioNames(), ",")+")")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	set := setFlags(fs)
	if set["wait"] {
		return bound.Usagef("matrix takes no -wait: its requests wait as docs/scenarios.md says")
	}
	cfg := suite.MatrixConfig{
		Scenarios:   cli.Split(*scenarios),
		Locks:       bo.Config.Locks,
		Requests:    bo.Config.Requests,
		Concurrency: bo.Config.Concurrency,
		Stock:       bo.Config.Stock,
		Timeout:     bo.Config.Timeout,
		Stack:       template(so, *verbose),
		RequireReal: so.Config.RequireReal,
		Progress:    bo.Config.Progress,
		Timelines:   race.ReportTimelines,
	}
	if set["endpoints"] {
		cfg.Endpoints = bo.Config.Endpoints
	}
	for _, s := range cfg.Scenarios {
		if _, err := suite.LookupScenario(s); err != nil {
			return bound.Usage(err)
		}
	}
	fmt.Printf("matrix: %d requests at %d concurrent per run, stock %d, each scenario on a fresh stack\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock)
	_, _, err = suite.CompareMatrix(ctx, cfg, bo.Out, os.Stdout)
	return err
}

// runChaos is bench chaos, with the stack flags as its template; -n, -c,
// -stock and -locks only when given (the suite has its own sizes).
func runChaos(ctx context.Context, args []string) error {
	fs := newFlags("chaos", "The fault suite: kill, drain, Redis stop, retry trap, failover, partition, random repeats,\n"+
		"each fault on a fresh stack on free ports; a table of figures and results/chaos-*.{json,md}.")
	verbose := fs.Bool("v", false, "show each stack's log (starts, crashes, restarts, masters)")
	faults := fs.String("faults", "", "comma-separated fault numbers, 1 to 8 (default all)")
	repeats := fs.Int("repeats", suite.DefaultRepeats, "runs of each schedule in fault 7")
	trials := fs.Int("trials", suite.DefaultTrials, "failover trials per lock in fault 5")
	seed := fs.Uint64("seed", 0, "seed of fault 7's random timing (default: from the clock, printed)")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	if err := bound.First(bound.IntIn("repeats", *repeats, 1, 1000), bound.IntIn("trials", *trials, 1, 1000)); err != nil {
		return err
	}
	set := setFlags(fs)
	for _, f := range []string{"wait", "endpoints"} {
		if set[f] {
			return bound.Usagef("chaos takes no -%s: it starts a stack per fault and loads /sale", f)
		}
	}
	cfg := suite.ChaosConfig{Repeats: *repeats, Trials: *trials, Seed: *seed,
		Stack: template(so, *verbose), RequireReal: so.Config.RequireReal,
		Progress: bo.Config.Progress, Timeout: bo.Config.Timeout}
	for _, f := range cli.Split(*faults) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return bound.Usagef("-faults: %q is not a fault number (1 to 8)", f)
		}
		cfg.Faults = append(cfg.Faults, n)
	}
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
	_, err = suite.CompareChaos(ctx, cfg, bo.Out, os.Stdout)
	return err
}

// template is the stack a suite derives each of its stacks from: a
// temporary run dir each (never .run), and their logs only with -v (the
// progress lines say what runs; the reports name the stack).
func template(so cli.StackOptions, verbose bool) stack.Config {
	tmpl := so.Config
	tmpl.Dir = ""
	if !verbose {
		tmpl.Log = nil
	}
	return tmpl
}
