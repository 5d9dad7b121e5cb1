package main

import (
	"context"
	"os"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

func init() { commands["check"] = runCheck }

// runCheck is bench check (make bench-check, make bench-baseline): each
// rung's cost as ratios to atomic's in the same run, against the
// committed baseline (suite.CostsCommand).
func runCheck(ctx context.Context, args []string) error {
	fs := cli.NewFlags("bench", "check", "A short run of every rung on both endpoints on a fresh stack on free ports, each rung's throughput\n"+
		"and p99 as ratios to atomic's in the same run, against the baseline's: a rung past the bound fails the check.\n"+
		"With -write, the median of -runs checks becomes the baseline (its sizes from -n, -c and -stock).")
	baseline := fs.String("baseline", stack.RepoPath("bench", "cost", "baseline.json"), "the baseline of ratios")
	write := fs.Bool("write", false, "write the baseline instead of checking against it")
	runs := fs.Int("runs", 1, "checks to run, each on a fresh stack (with -write, the baseline is their median)")
	commit := fs.String("commit", "", "the commit measured, recorded in the baseline")
	verbose := fs.Bool("v", false, "show the stack's log")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	set := cli.SetFlags(fs)
	for _, f := range []string{"wait", "endpoints", "skus"} {
		if set[f] {
			return bound.Usagef("check takes no -%s: it runs every rung as it waits by default, on both endpoints, on one item", f)
		}
	}
	if !*write && (set["n"] || set["c"] || set["stock"]) {
		return bound.Usagef("check runs the baseline's sizes: -n, -c and -stock go with -write")
	}
	if err := bound.IntIn("runs", *runs, 1, 100); err != nil {
		return err
	}
	cfg := suite.CostConfig{Size: suite.CostSize, Locks: bo.Config.Locks, Stack: suite.Template(so.Config, *verbose),
		Timeout: bo.Config.Timeout, Progress: bo.Config.Progress}
	if set["n"] {
		cfg.Requests = bo.Config.Requests
	}
	if set["c"] {
		cfg.Concurrency = bo.Config.Concurrency
	}
	if set["stock"] {
		cfg.Stock = bo.Config.Stock
	}
	return suite.CostsCommand(ctx, cfg, *baseline, *write, *runs, *commit, bo.Out, os.Stdout)
}
