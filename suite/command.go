package suite

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"strconv"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/stack"
)

// The suites as `bench matrix` and `bench chaos` run them, once their
// flags are parsed: set names the flags given on the command line.

// MatrixCommand is `bench matrix`: every lock of bc (only /sale unless
// -endpoints was given) under each of scenarios (all when empty), each
// scenario on a fresh stack derived from tmpl (Template); the grid on w,
// the reports in dir. timelines is race.ReportTimelines.
func MatrixCommand(ctx context.Context, tmpl stack.Config, bc bench.Config, set map[string]bool, scenarios []string,
	timelines func([]bench.Row) template.HTML, dir string, w io.Writer) error {
	if set["wait"] {
		return bound.Usagef("matrix takes no -wait: its requests wait as docs/scenarios.md says")
	}
	cfg := MatrixConfig{Scenarios: scenarios, Locks: bc.Locks, Requests: bc.Requests, Concurrency: bc.Concurrency,
		Stock: bc.Stock, Timeout: bc.Timeout, Stack: tmpl, RequireReal: tmpl.RequireReal, Progress: bc.Progress,
		Timelines: timelines}
	if set["endpoints"] {
		cfg.Endpoints = bc.Endpoints
	}
	for _, s := range cfg.Scenarios {
		if _, err := LookupScenario(s); err != nil {
			return bound.Usage(err)
		}
	}
	fmt.Fprintf(w, "matrix: %d requests at %d concurrent per run, stock %d, each scenario on a fresh stack\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock)
	_, _, err := CompareMatrix(ctx, cfg, dir, w)
	return err
}

// ChaosCommand is `bench chaos`: cfg's faults (given as numbers in
// faults; all when empty) each on a fresh stack derived from cfg.Stack;
// -n, -c, -stock and -locks of bc only when given (the suite has its own
// sizes); the table on w, the reports in dir.
func ChaosCommand(ctx context.Context, cfg ChaosConfig, bc bench.Config, set map[string]bool, faults []string, dir string, w io.Writer) error {
	for _, f := range []string{"wait", "endpoints"} {
		if set[f] {
			return bound.Usagef("chaos takes no -%s: it starts a stack per fault and loads /sale", f)
		}
	}
	for _, f := range faults {
		n, err := strconv.Atoi(f)
		if err != nil {
			return bound.Usagef("-faults: %q is not a fault number (1 to 8)", f)
		}
		cfg.Faults = append(cfg.Faults, n)
	}
	cfg.RequireReal, cfg.Progress, cfg.Timeout = cfg.Stack.RequireReal, bc.Progress, bc.Timeout
	if set["n"] {
		cfg.Requests = bc.Requests
	}
	if set["c"] {
		cfg.Concurrency = bc.Concurrency
	}
	if set["stock"] {
		cfg.Stock = bc.Stock
	}
	if set["locks"] {
		cfg.Locks = bc.Locks
	}
	if cfg.Lanes > 1 {
		fmt.Fprintf(w, "fault suite: each fault on fresh stacks on free loopback ports, %d at once\n", cfg.Lanes)
	} else {
		fmt.Fprintln(w, "fault suite: each fault on a fresh stack on free loopback ports")
	}
	_, err := CompareChaos(ctx, cfg, dir, w)
	return err
}
