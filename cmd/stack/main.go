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
// .run/stack.json (package stackstate), which down reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/internal/stackstate"
	"github.com/lockladder/lockladder/stack"
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
			err = run(ctx, o, nil)
		}
	case "up":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = up(ctx, o, args)
		}
	case "demo":
		err = demo(ctx, args)
	case "down":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = stackstate.Down(o.State, os.Stdout)
		}
	case "guard": // who holds the run guard; -break frees it
		err = stack.GuardCommand(ctx, args, os.Stdout)
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
	return finish(fs.Args())
}

// errDone, returned by a run hook, stops the stack at once instead of
// waiting for a signal.
var errDone = errors.New("done")

// run starts the stack, prints what runs, records it in the state file,
// calls hook (if any) and then serves until ctx ends (SIGINT, SIGTERM or
// SIGHUP: a closed terminal), or at once if hook returns errDone.
// Everything is stopped before it returns.
func run(ctx context.Context, o options, hook func(context.Context, *stack.Stack) error) (err error) {
	if st, ok := stackstate.Live(o.State, os.Stderr); ok {
		return fmt.Errorf("a stack is already up at %s (pid %d): stop it with `stack down` first", st.URL, st.Pid)
	}
	if err := prepareRunDir(o.Dir); err != nil {
		return err
	}
	s, err := stack.Start(ctx, o.Config)
	if err != nil {
		return err
	}
	stateCtx, stopState := context.WithCancel(ctx)
	stateDone := make(chan struct{})
	defer func() {
		stopState()
		<-stateDone
		fmt.Fprintln(os.Stderr, "stack: stopping")
		err = errors.Join(err, s.Stop())
		os.Remove(o.State)
		if err == nil {
			fmt.Fprintln(os.Stderr, "stack: stopped")
		}
	}()
	fmt.Println("url:", s.URL())
	if err := stackstate.Write(o.State, s); err != nil {
		close(stateDone)
		return err
	}
	go func() {
		defer close(stateDone)
		stackstate.Keep(stateCtx, o.State, s)
	}()
	if hook != nil {
		if err := hook(ctx, s); errors.Is(err, errDone) {
			return nil
		} else if err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// prepareRunDir creates the run dir and keeps it out of git without
// touching the repo's .gitignore.
func prepareRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(gi, []byte("# Written by cmd/stack: run files, never committed.\n*\n"), 0o644)
	}
	return nil
}
