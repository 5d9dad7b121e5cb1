package main

import (
	"context"
	"os"

	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/suite"
)

func init() { commands["check"] = runCheck }

// runCheck is bench check (make bench-check, make bench-baseline): each
// rung's cost as ratios to atomic's in the same run, against the
// committed baseline (suite.CostsCommand).
func runCheck(ctx context.Context, args []string) error {
	c, err := cli.ParseCheck(args)
	if err != nil {
		return err
	}
	return suite.CostsCommand(ctx, c.Config, c.Baseline, c.Write, c.Runs, c.Commit, c.Out, os.Stdout)
}
