package main

import (
	"context"
	"os"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
)

func init() { commands["explore"] = runExplore }

// runExplore searches each Redis rung's schedules for the shortest one
// that breaks it, and replays what it finds on a real redis-server
// (explore.Command).
func runExplore(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bench", "explore", "Search each Redis rung's interleavings, with crashes, pauses, clock skew and time passing as choices,\n"+
		"for the shortest that oversells or deadlocks; print it as a sequence diagram, replay it on a real redis-server,\n"+
		"and end with one line per rung (docs/explore.md).")
	locks := fs.String("locks", "", "comma-separated rungs (default the rungs on one server: "+explore.Names(explore.Targets)+
		"; also "+explore.Names(explore.OnMasters)+" and the libraries "+explore.Names(explore.Libraries)+")")
	budget := fs.Duration("budget", 60_000_000_000, "time bound per rung")
	depth := fs.Int("depth", 0, "steps bound per schedule (default 18)")
	clients := fs.Int("clients", 0, "clients, at most (2, then up to this; default 3)")
	faults := fs.String("faults", "", "faults to search instead of each rung's own scenario: crash,pause,skew,slow,late,idle,restart (restart: redlock)")
	maxFaults := fs.Int("max-faults", 0, "faults per schedule (default 1)")
	replay := fs.Bool("replay", true, "replay each counterexample on a real redis-server (started on a free loopback port)")
	if err := fs.Parse(args); err != nil {
		return bound.Usage(err)
	}
	if fs.NArg() > 0 {
		return bound.Usagef("unexpected argument %q: bench explore's flags start with - (-locks a,b)", fs.Arg(0))
	}
	if err := bound.First(
		bound.Duration("budget", *budget, bound.MaxTimeout),
		bound.IntIn("depth", *depth, 0, 64),
		bound.IntIn("clients", *clients, 0, 8),
		bound.IntIn("max-faults", *maxFaults, 0, 4),
	); err != nil {
		return err
	}
	cfg := explore.Config{Budget: *budget, Depth: *depth, MaxClients: *clients, MaxFaults: *maxFaults}
	return explore.Command(ctx, cli.Split(*locks), cfg, *faults, *replay, os.Getenv("CI") == "true", os.Stdout)
}
