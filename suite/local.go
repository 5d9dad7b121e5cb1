package suite

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// CompareLocal is `bench run`: the comparison (bench.Compare, its table
// on w, its reports in dir) through the load balancer at cfg.URL, or,
// when that is "", of the local stack on lbPort, started from sc for the
// run (in a temporary run dir, stopped after) if nothing answers there.
// A stack already up (make up) is the one runDir holds: its instances are
// where sc puts them and the run guard's key is its owner's. loadProcs
// says, or not, how the load shares the cores (cli.LoadProcs, given
// whether the stack serves part of itself from this process).
func CompareLocal(ctx context.Context, cfg bench.Config, sc stack.Config, lbPort int, runDir, dir string,
	loadProcs func(inProcess bool) string, w, errw io.Writer) error {
	var (
		notes     []string
		inProcess bool // the stack started here serves part of itself from this process
	)
	if cfg.URL == "" {
		cfg.URL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(lbPort))
		if healthy(ctx, cfg.URL, false) != nil {
			fmt.Fprintf(errw, "bench: nothing answers at %s: starting a stack for this run\n", cfg.URL)
			sc.Dir = "" // a temporary run dir, removed with the stack
			s, err := stack.Start(ctx, sc)
			if err != nil {
				return err
			}
			defer func() {
				if err := s.Stop(); err != nil {
					fmt.Fprintln(errw, "bench: stopping the stack:", err)
				}
			}()
			cfg.URL, cfg.Instances, cfg.RunKey = s.URL(), s.InstanceURLs(), s.RedisPassword()
			notes, inProcess = s.Summary(), s.InProcess()
		} else {
			cfg.Instances = sc.InstanceURLs()
		}
	} else if err := healthy(ctx, cfg.URL, cfg.AllowRemote); err != nil {
		return fmt.Errorf("nothing healthy answers at %s/healthz: %w", cfg.URL, err)
	}
	if cfg.RunKey == "" { // make up's stack: the run guard's key is its owner's
		cfg.RunKey, _ = stack.ReadPassword(runDir)
	}
	if l := loadProcs(inProcess); l != "" {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "benchmark: %d requests at %d concurrent per run, stock %d, through %s\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock, cfg.URL)
	_, err := bench.Compare(ctx, cfg, dir, notes, w)
	return err
}

// healthy asks GET url/healthz, for at most 2s.
func healthy(ctx context.Context, url string, allowRemote bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return bench.Healthz(ctx, url, allowRemote)
}

// Template is the stack a suite derives each of its stacks from: sc
// with a temporary run dir each (never .run), and their logs only when
// verbose (the progress lines say what runs; the reports name the
// stack).
func Template(sc stack.Config, verbose bool) stack.Config {
	sc.Dir = ""
	if !verbose {
		sc.Log = nil
	}
	return sc
}
