package main

import (
	"context"
	"os"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/cli"
)

func init() { commands["explore"] = runExplore }

// runExplore searches each Redis rung's schedules for the shortest one
// that breaks it, and replays what it finds on a real redis-server
// (explore.Command).
func runExplore(ctx context.Context, args []string) error {
	e, err := cli.ParseExplore(args)
	if err != nil {
		return err
	}
	return explore.Command(ctx, e.Locks, e.Config, e.Faults, e.Replay, e.CI, os.Stdout)
}
