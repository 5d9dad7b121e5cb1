package main

import (
	"context"
	"os"
	"strings"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/suite"
)

// runMatrix is bench matrix, with the stack flags as the template of each
// scenario's stack: the app binary, nginx.conf, the Redis and LB modes,
// -masters, the app flags after --. Only /sale unless -endpoints is given.
func runMatrix(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bench", "matrix", "Every lock under each scenario of docs/scenarios.md, each scenario on a fresh stack on free ports;\n"+
		"a grid of verdicts against the ladder's and results/matrix-*.{html,json,md} (the HTML draws each failed run's timeline).")
	verbose := fs.Bool("v", false, "show each stack's log (starts, crashes, restarts, masters)")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios (default all: "+strings.Join(suite.ScenarioNames(), ",")+")")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	return suite.MatrixCommand(ctx, suite.Template(so.Config, *verbose), bo.Config, cli.SetFlags(fs), cli.Split(*scenarios),
		race.ReportTimelines, bo.Out, os.Stdout)
}

// runChaos is bench chaos, with the stack flags as its template; -n, -c,
// -stock and -locks only when given (the suite has its own sizes).
func runChaos(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bench", "chaos", "The fault suite: kill, drain, Redis stop, retry trap, failover, partition, random repeats,\n"+
		"each fault on a fresh stack on free ports; a table of figures and results/chaos-*.{json,md}.")
	verbose := fs.Bool("v", false, "show each stack's log (starts, crashes, restarts, masters)")
	faults := fs.String("faults", "", "comma-separated fault numbers, 1 to 8 (default all)")
	repeats := fs.Int("repeats", suite.DefaultRepeats, "runs of each schedule in fault 7")
	trials := fs.Int("trials", suite.DefaultTrials, "failover trials per lock in fault 5")
	seed := fs.Uint64("seed", 0, "seed of fault 7's random timing (default: from the clock, printed)")
	lanes := fs.Int("lanes", 2, "faults at once, each on stacks of its own, the longest first (1: one after the other)")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	if err := bound.First(bound.IntIn("repeats", *repeats, 1, 1000), bound.IntIn("trials", *trials, 1, 1000),
		bound.IntIn("lanes", *lanes, 1, 8)); err != nil {
		return err
	}
	cfg := suite.ChaosConfig{Repeats: *repeats, Trials: *trials, Seed: *seed, Lanes: *lanes, Stack: suite.Template(so.Config, *verbose)}
	return suite.ChaosCommand(ctx, cfg, bo.Config, cli.SetFlags(fs), cli.Split(*faults), bo.Out, os.Stdout)
}
