package cli

import (
	"os"
	"time"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// Check is bench check's command line: the cost check's config, and what
// suite.CostsCommand does with it.
type Check struct {
	Config   suite.CostConfig
	Baseline string // the baseline of ratios
	Write    bool   // write the baseline instead of checking against it
	Runs     int
	Commit   string // the commit measured, recorded in the baseline
	Out      string // the reports' folder
}

// ParseCheck parses bench check's flags: the stack's and the benchmark's,
// and its own; the sizes only with -write (a check runs the baseline's).
func ParseCheck(args []string) (Check, error) {
	fs := NewFlags("bench", "check", "A short run of every rung on both endpoints on a fresh stack on free ports, each rung's throughput\n"+
		"and p99 as ratios to atomic's in the same run, against the baseline's: a rung past the bound fails the check.\n"+
		"With -write, the median of -runs checks becomes the baseline (its sizes from -n, -c and -stock).")
	var c Check
	fs.StringVar(&c.Baseline, "baseline", stack.RepoPath("bench", "cost", "baseline.json"), "the baseline of ratios")
	fs.BoolVar(&c.Write, "write", false, "write the baseline instead of checking against it")
	fs.IntVar(&c.Runs, "runs", 1, "checks to run, each on a fresh stack (with -write, the baseline is their median)")
	fs.StringVar(&c.Commit, "commit", "", "the commit measured, recorded in the baseline")
	verbose := fs.Bool("v", false, "show the stack's log")
	so, bo, err := ParseStackBench(fs, args)
	if err != nil {
		return Check{}, err
	}
	set := SetFlags(fs)
	for _, f := range []string{"wait", "endpoints", "skus"} {
		if set[f] {
			return Check{}, bound.Usagef("check takes no -%s: it runs every rung as it waits by default, on both endpoints, on one item", f)
		}
	}
	if !c.Write && (set["n"] || set["c"] || set["stock"]) {
		return Check{}, bound.Usagef("check runs the baseline's sizes: -n, -c and -stock go with -write")
	}
	if err := bound.IntIn("runs", c.Runs, 1, 100); err != nil {
		return Check{}, err
	}
	c.Out = bo.Out
	c.Config = suite.CostConfig{Size: suite.CostSize, Locks: bo.Config.Locks, Stack: suite.Template(so.Config, *verbose),
		Timeout: bo.Config.Timeout, Progress: bo.Config.Progress}
	if set["n"] {
		c.Config.Requests = bo.Config.Requests
	}
	if set["c"] {
		c.Config.Concurrency = bo.Config.Concurrency
	}
	if set["stock"] {
		c.Config.Stock = bo.Config.Stock
	}
	return c, nil
}

// Explore is bench explore's command line, as explore.Command takes it.
type Explore struct {
	Locks  []string
	Config explore.Config
	Faults string // the faults to search instead of each rung's own scenario
	Replay bool   // replay each counterexample on a real redis-server
	CI     bool   // CI=true: a missing redis-server fails the replay
}

// ParseExplore parses bench explore's flags, each bounded.
func ParseExplore(args []string) (Explore, error) {
	fs := NewFlags("bench", "explore", "Search each Redis rung's interleavings, with crashes, pauses, clock skew and time passing as choices,\n"+
		"for the shortest that oversells or deadlocks; print it as a sequence diagram, replay it on a real redis-server,\n"+
		"and end with one line per rung (docs/explore.md).")
	locks := fs.String("locks", "", "comma-separated rungs (default the rungs on one server: "+explore.Names(explore.Targets)+
		"; also "+explore.Names(explore.OnMasters)+" and the libraries "+explore.Names(explore.Libraries)+")")
	var e Explore
	fs.DurationVar(&e.Config.Budget, "budget", time.Minute, "time bound per rung")
	fs.IntVar(&e.Config.Depth, "depth", 0, "steps bound per schedule (default 18)")
	fs.IntVar(&e.Config.MaxClients, "clients", 0, "clients, at most (2, then up to this; default 3)")
	fs.StringVar(&e.Faults, "faults", "", "faults to search instead of each rung's own scenario: crash,pause,skew,slow,late,idle,restart,lost,cancel (restart: redlock; lost, cancel: not on masters)")
	fs.IntVar(&e.Config.MaxFaults, "max-faults", 0, "faults per schedule (default 1)")
	fs.BoolVar(&e.Replay, "replay", true, "replay each counterexample on a real redis-server (started on a free loopback port)")
	if err := fs.Parse(args); err != nil {
		return Explore{}, bound.Usage(err)
	}
	if fs.NArg() > 0 {
		return Explore{}, bound.Usagef("unexpected argument %q: bench explore's flags start with - (-locks a,b)", fs.Arg(0))
	}
	if err := bound.First(
		bound.Duration("budget", e.Config.Budget, bound.MaxTimeout),
		bound.IntIn("depth", e.Config.Depth, 0, 64),
		bound.IntIn("clients", e.Config.MaxClients, 0, 8),
		bound.IntIn("max-faults", e.Config.MaxFaults, 0, 4),
	); err != nil {
		return Explore{}, err
	}
	e.Locks, e.CI = Split(*locks), os.Getenv("CI") == "true"
	return e, nil
}
