package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
)

// runBench is bench run (and bench with no subcommand): the comparison
// through the load balancer of a running stack, or of one started for it.
func runBench(ctx context.Context, args []string) error {
	if err := refuseOldForm(args); err != nil {
		return err
	}
	fs := newFlags("run", "The comparison: every lock through the load balancer, a table and results/bench-*.{json,md}.\n"+
		"Also: bench matrix (the scenarios), bench chaos (the fault suite), bench explore (each Redis rung's shortest failing schedule).")
	url := fs.String("url", "", "load balancer to target (default: the local stack on -lb-port, started if nothing answers)")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback -url (docker compose); load never leaves this machine otherwise")
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	cfg := bo.Config
	cfg.AllowRemote = *allowRemote
	cfg.URL = *url
	var (
		notes     []string
		inProcess bool // the stack started here serves part of itself from this process
	)
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
			cfg.RunKey = s.RedisPassword()
			notes = s.Summary()
			inProcess = s.InProcess()
		} else {
			// make up's stack: its instances are where these flags put them.
			cfg.Instances = so.Config.InstanceURLs()
		}
	} else if err := healthy(ctx, cfg.URL, cfg.AllowRemote); err != nil {
		return fmt.Errorf("nothing healthy answers at %s/healthz: %w", cfg.URL, err)
	}
	if cfg.RunKey == "" { // make up's stack: the run guard's key is its owner's
		cfg.RunKey, _ = stack.ReadPassword(so.Dir)
	}
	if l := cli.LoadProcs(inProcess); l != "" {
		fmt.Println(l)
	}
	fmt.Printf("benchmark: %d requests at %d concurrent per run, stock %d, through %s\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock, cfg.URL)
	_, err = bench.Compare(ctx, cfg, bo.Out, notes, os.Stdout)
	return err
}

// healthy asks GET url/healthz, for at most 2s.
func healthy(ctx context.Context, url string, allowRemote bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return bench.Healthz(ctx, url, allowRemote)
}
