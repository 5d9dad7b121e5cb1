// Command bench loads the lab's locks and judges every run from the
// counters it reads back, in three ways, and explores their code:
//
//	bench [run] [flags] [-- app flags]   replays `ab -n 5000 -c 100` against
//	                                     every lock through the load balancer
//	bench matrix [flags] [-- app flags]  the strategies x scenarios matrix
//	bench chaos [flags] [-- app flags]   the fault suite
//	bench explore [flags]                each Redis rung's shortest failing
//	                                     schedule, searched (docs/explore.md)
//	bench check [flags] [-- app flags]   each rung's cost against the
//	                                     committed baseline (bench/cost)
//
// run is the default. With no -url it targets the local stack, or starts
// one for the run and stops it after. matrix and chaos run each scenario or
// fault on fresh stacks on free loopback ports (docs/scenarios.md); each
// subcommand's -h says what it writes. The stack's and the benchmark's
// flags (internal/cli) are the same in all of them and in cmd/stack.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
)

func main() {
	cli.KeepMonitorAwake()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		// The bench and suite packages' errors say "bench: " already.
		fmt.Fprintln(os.Stderr, "bench:", strings.TrimPrefix(err.Error(), "bench: "))
		os.Exit(bound.ExitCode(err)) // 2: a flag refused before anything started
	}
}

// commands are bench's subcommands, each parsing its own flags.
var commands = map[string]func(ctx context.Context, args []string) error{
	"run":    runBench,
	"matrix": runMatrix,
	"chaos":  runChaos,
}

// dispatch runs the subcommand args name, or run when args start with a
// flag (or are empty).
func dispatch(ctx context.Context, args []string) error {
	if len(args) > 0 {
		if cmd, ok := commands[args[0]]; ok {
			return cmd(ctx, args[1:])
		}
		if !strings.HasPrefix(args[0], "-") {
			return bound.Usagef("no subcommand %q (bench run, bench matrix, bench chaos, bench explore or bench check; bench -h)", args[0])
		}
	}
	return runBench(ctx, args)
}
