package main

import (
	"context"
	"os"

	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/suite"
)

// runBench is bench run (and bench with no subcommand): the comparison
// through the load balancer of a running stack, or of one started for it
// (suite.CompareLocal).
func runBench(ctx context.Context, args []string) error {
	if err := cli.RefuseOldForm("bench", args, "matrix", "chaos"); err != nil {
		return err
	}
	fs := cli.NewFlags("bench", "run", "The comparison: every lock through the load balancer, a table and results/bench-*.{json,md}.\n"+
		"Also: bench matrix (the scenarios), bench chaos (the fault suite), bench explore (each Redis rung's shortest failing schedule).")
	url := fs.String("url", "", "load balancer to target (default: the local stack on -lb-port, started if nothing answers)")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback -url (docker compose); load never leaves this machine otherwise")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	cfg := bo.Config
	cfg.AllowRemote, cfg.URL = *allowRemote, *url
	return suite.CompareLocal(ctx, cfg, so.Config, so.LBPort, so.Dir, bo.Out, cli.LoadProcs, os.Stdout, os.Stderr)
}
