// Command bench replays `ab -n 5000 -c 100` against every lock through the
// load balancer and judges each run from the counters it reads back.
//
// With no -url it targets the local stack (http://127.0.0.1:LB_PORT); if
// nothing answers there it starts one for the run and stops it after.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	url := fs.String("url", "", "load balancer to target (default: the local stack on -lb-port, started if nothing answers)")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback -url (docker compose); load never leaves this machine otherwise")
	finishStack := cli.StackFlags(fs)
	finishBench := cli.BenchFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	so, err := finishStack(fs.Args())
	if err != nil {
		return err
	}
	bo, err := finishBench()
	if err != nil {
		return err
	}
	cfg := bo.Config
	cfg.AllowRemote = *allowRemote
	cfg.URL = *url
	var notes []string
	if cfg.URL == "" {
		cfg.URL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(so.LBPort))
		if !healthy(ctx, cfg.URL) {
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
			notes = s.Summary()
		}
	} else if !healthy(ctx, cfg.URL) {
		return fmt.Errorf("nothing healthy answers at %s/healthz", cfg.URL)
	}
	fmt.Printf("benchmark: %d requests at %d concurrent per run, stock %d, through %s\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock, cfg.URL)
	_, err = bench.Compare(ctx, cfg, bo.Out, notes, os.Stdout)
	return err
}

// healthy reports whether the app answers GET /healthz with 200 at url.
func healthy(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
