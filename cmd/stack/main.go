// Command stack runs the lab's topology on loopback: one Redis, app
// instances (bin/app) and a load balancer, as package stack describes.
//
//	stack run  [flags] [-- app flags]   in the foreground until Ctrl-C
//	stack up   [flags] [-- app flags]   the same in the background
//	stack down [-dir .run]              stop what up started
//
// up re-runs this binary as `stack run` in a new session with its output in
// .run/stack.log; run records itself and every process it started in
// .run/stack.json, which down reads.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockladder/lockladder/stack"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	case "down":
		var o options
		if o, err = parseFlags(cmd, args); err == nil {
			err = down(o)
		}
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
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  stack run  [flags] [-- app flags]   start the stack in the foreground; Ctrl-C stops it
  stack up   [flags] [-- app flags]   start it in the background (log and state in .run/)
  stack down [-dir DIR]               stop what up started

Run "stack run -h" for the flags. App flags after -- go to every instance
(e.g. -- -lock-ttl 2s). Under CI=true a missing redis-server or nginx is an
error, not a fallback.
`)
}

// options is a parsed command line.
type options struct {
	cfg   stack.Config
	dir   string // run dir (.run under the repo root)
	state string // dir/stack.json
}

func parseFlags(cmd string, args []string) (options, error) {
	fs := flag.NewFlagSet("stack "+cmd, flag.ContinueOnError)
	finish := stackFlags(fs)
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	return finish(fs.Args())
}

// stackFlags registers the stack's flags on fs; after fs.Parse, the
// returned function builds the options, with appArgs for every instance.
// A subcommand with flags of its own (demo) adds them to the same fs.
func stackFlags(fs *flag.FlagSet) func(appArgs []string) (options, error) {
	var (
		o         options
		lbPort    = fs.Int("lb-port", 8080, "load balancer port on 127.0.0.1 (0 with -app-port 0: free ports for all)")
		redisPort = fs.Int("redis-port", 6380, "Redis port on 127.0.0.1 (0: a free port)")
		redisMode = fs.String("redis", "auto", "Redis: auto (redis-server if on PATH, else embedded), real or embedded (miniredis in this process)")
		lbMode    = fs.String("lb", "auto", "load balancer: auto (nginx if on PATH, else builtin), nginx or builtin (Go reverse proxy in this process)")
	)
	fs.StringVar(&o.dir, "dir", repoPath(".run"), "run dir: logs, derived nginx.conf, state file")
	fs.IntVar(&o.cfg.Instances, "instances", stack.DefaultInstances, "number of app instances")
	fs.IntVar(&o.cfg.AppBasePort, "app-port", stack.DefaultAppBasePort, "first app port; instances listen on it and the ports after it")
	fs.StringVar(&o.cfg.AppBinary, "app", repoPath("bin", "app"), "app binary (go build -o bin/app ./cmd/app)")
	fs.StringVar(&o.cfg.NginxConf, "nginx-conf", repoPath("nginx.conf"), "nginx.conf to derive the loopback config from")
	return func(appArgs []string) (options, error) {
		o.cfg.AppArgs = appArgs
		o.cfg.LBAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(*lbPort))
		o.cfg.RedisAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(*redisPort))
		if o.cfg.Instances < 1 {
			return o, fmt.Errorf("-instances %d: want at least 1", o.cfg.Instances)
		}
		switch *redisMode {
		case "auto", "real", "embedded":
			o.cfg.Redis = stack.Mode(*redisMode)
		default:
			return o, fmt.Errorf("-redis %q: want auto, real or embedded", *redisMode)
		}
		switch *lbMode {
		case "auto":
			o.cfg.LB = stack.Auto
		case "nginx", "real":
			o.cfg.LB = stack.Real
		case "builtin", "embedded":
			o.cfg.LB = stack.Embedded
		default:
			return o, fmt.Errorf("-lb %q: want auto, nginx or builtin", *lbMode)
		}
		o.cfg.Dir = o.dir
		o.cfg.RequireReal = os.Getenv("CI") == "true"
		o.cfg.Log = os.Stderr
		o.state = filepath.Join(o.dir, "stack.json")
		return o, nil
	}
}

// errDone, returned by a run hook, stops the stack at once instead of
// waiting for a signal.
var errDone = errors.New("done")

// run starts the stack, prints what runs, records it in the state file,
// calls hook (if any) and then serves until ctx ends (SIGINT/SIGTERM), or
// at once if hook returns errDone. Everything is stopped before it returns.
func run(ctx context.Context, o options, hook func(context.Context, *stack.Stack) error) (err error) {
	if st, ok := liveState(o.state); ok {
		return fmt.Errorf("a stack is already up at %s (pid %d): stop it with `stack down` first", st.URL, st.Pid)
	}
	if err := prepareRunDir(o.dir); err != nil {
		return err
	}
	s, err := stack.Start(ctx, o.cfg)
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
		os.Remove(o.state)
		if err == nil {
			fmt.Fprintln(os.Stderr, "stack: stopped")
		}
	}()
	for _, l := range s.Summary() {
		fmt.Println(l)
	}
	fmt.Println("url:", s.URL())
	if err := writeState(o.state, s); err != nil {
		close(stateDone)
		return err
	}
	go func() {
		defer close(stateDone)
		keepState(stateCtx, o.state, s)
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

// repoPath joins elem to the repo root (the nearest directory at or above
// the working directory holding go.mod; else the working directory).
func repoPath(elem ...string) string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join(elem...)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return rel(wd, filepath.Join(append([]string{d}, elem...)...))
		}
		if filepath.Dir(d) == d {
			return filepath.Join(elem...)
		}
	}
}

// rel shortens p relative to wd when it is under it, for readable defaults.
func rel(wd, p string) string {
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
