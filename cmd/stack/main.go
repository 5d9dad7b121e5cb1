// Command stack runs the lab's topology on loopback: one Redis, app
// instances (bin/app) and a load balancer, as package stack describes.
//
//	stack run  [flags] [-- app flags]   in the foreground until Ctrl-C
//	stack up   [flags] [-- app flags]   the same in the background
//	stack down [-dir .run]              stop what up started
//	stack demo [flags] [-- app flags]   run, benchmark, keep serving until Ctrl-C
//
// up re-runs this binary as `stack run` in a new session with its output in
// .run/stack.log; run records itself and every process it started in
// .run/stack.json; down reads it (package stackstate does all three).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/internal/stackstate"
)

func main() {
	cli.KeepMonitorAwake()
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	// A closed terminal (SIGHUP), or a gone reader of a piped output
	// (SIGPIPE, ignored: the write fails, the stop goes on), stops the
	// stack as Ctrl-C does, not the supervisor alone.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "run":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = stackstate.Run(ctx, o.Config, o.State, os.Stdout, os.Stderr, nil)
		}
	case "up":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = stackstate.Up(ctx, o.State, args, os.Stdout)
		}
	case "demo":
		err = demo(ctx, args)
	case "down":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = stackstate.Down(o.State, os.Stdout)
		}
	case "guard": // who holds the run guard; -break frees it
		err = stackstate.GuardCommand(ctx, args, os.Stdout)
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return
	default:
		usage(os.Stderr)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stack:", strings.TrimPrefix(err.Error(), "stack: "))
		os.Exit(bound.ExitCode(err)) // 2: a flag refused before anything started
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  stack run  [flags] [-- app flags]   start the stack in the foreground; Ctrl-C stops it
  stack up   [flags] [-- app flags]   start it in the background (log and state in .run/)
  stack down [-dir DIR]               stop what up started
  stack guard [-dir DIR] [-break]     who holds the run guard; -break frees it
  stack demo [flags] [-- app flags]   run, benchmark every lock through the load
                                      balancer, print the table, serve until Ctrl-C

Run "stack run -h" for the flags. App flags after -- go to every instance
(e.g. -- -lock-ttl 2s). Under CI=true a missing redis-server or nginx is an
error, not a fallback.
`)
}

// options is a parsed stack command line.
type options = cli.StackOptions

func parseFlags(cmd string, args []string) (options, error) {
	fs := flag.NewFlagSet("stack "+cmd, flag.ContinueOnError)
	finish := cli.StackFlags(fs)
	if err := fs.Parse(args); err != nil {
		return options{}, bound.Usage(err)
	}
	appArgs, err := cli.AppArgs(fs, args)
	if err != nil {
		return options{}, err
	}
	return finish(appArgs)
}
