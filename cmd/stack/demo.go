package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/internal/stackstate"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// demo is `make demo`: bring the stack up, run the comparison through the
// load balancer, print the table, then the ladder of flaws
// (suite.DemoLadder) and the reports' paths, then keep serving the page
// until Ctrl-C.
func demo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stack demo", flag.ContinueOnError)
	so, bo, err := cli.ParseStackBench(fs, args)
	if err != nil {
		return err
	}
	return stackstate.Run(ctx, so.Config, so.State, os.Stdout, os.Stderr, func(ctx context.Context, s *stack.Stack) error {
		cfg := bo.Config
		cfg.URL = s.URL()
		cfg.Instances = s.InstanceURLs()
		cfg.Run.Kind, cfg.RunKey = "demo", s.RedisPassword()
		cfg.Brief = true // the table that follows says each run once
		if l := cli.LoadProcs(s.InProcess()); l != "" {
			fmt.Println(l)
		}
		fmt.Printf("\nbenchmark: %d requests at %d concurrent per run, stock %d, through %s\n",
			cfg.Requests, cfg.Concurrency, cfg.Stock, s.URL())
		plain, rep, err := bench.CompareReports(ctx, cfg, bo.Out, s.Summary(), os.Stdout)
		if err == nil {
			err = suite.DemoLadder(ctx, so.Config, bo.Out, rep, plain, race.ReportTimelines, os.Stdout, os.Stderr)
		}
		if err != nil {
			if ctx.Err() != nil {
				return stackstate.ErrDone
			}
			return err
		}
		fmt.Printf("\nserving: the lab (%s/lab), or curl -X POST '%s/sale?lock=lua'\n", s.URL(), s.URL())
		fmt.Println("press Ctrl-C to stop every process this demo started")
		fmt.Printf("the course: open %s/ in a browser\n", s.URL())
		return nil
	})
}
