package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/bench/cost"
	"github.com/lockladder/lockladder/stack"
)

// CostSize is the size of each run of a cost check, unless a baseline
// says otherwise: 1000 requests at 100 at once, a fifth of them sold
// (the articles' proportions), so that every rung runs a few seconds on
// two idle cores.
var CostSize = cost.Size{Requests: 1000, Concurrency: 100, Stock: 200}

// CostConfig describes a cost check's runs (RunCosts).
type CostConfig struct {
	cost.Size
	// Locks to check; default every lock the app offers.
	Locks []string
	// Stack is the template of the check's stack, always on free
	// loopback ports (never make up's); RequireReal as in MatrixConfig.
	Stack       stack.Config
	RequireReal bool
	// Every is how many rungs run between two runs of the reference
	// (cost.Ratios compares each rung with the two around it); default 4.
	Every int
	// Passes is how many times each rung runs, the ladder in turn down and
	// up (cost.Ratios keeps each rung's best); default 2.
	Passes int
	// Timeout bounds each request, as in bench.Config.
	Timeout  time.Duration
	Progress io.Writer
	// Start starts the stack; default stack.Start. Tests put fakes here.
	Start func(ctx context.Context, cfg stack.Config) (Stack, error)
}

// CostRun is what one check measured.
type CostRun struct {
	Figures []cost.Figures
	// NotRun are the locks the app offers but cannot serve here, and why.
	NotRun map[string]string
	// Notes say what the stack ran on.
	Notes []string
}

// RunCosts starts a stack from cfg.Stack on free ports, runs every lock of
// cfg.Locks (every lock the app offers) on both endpoints, cfg.Passes
// times (down the ladder, then up), the reference (cost.Reference) before
// the first and after every cfg.Every of them, and stops the stack. The reference's first runs warm the stack
// (its connections, the servers' caches) and are not kept.
func RunCosts(ctx context.Context, cfg CostConfig) (CostRun, error) {
	var out CostRun
	if cfg.Every <= 0 {
		cfg.Every = 4
	}
	if cfg.Passes <= 0 {
		cfg.Passes = 2
	}
	sc := cfg.Stack
	sc.LBAddr, sc.RedisAddr, sc.AppBasePort = "127.0.0.1:0", "127.0.0.1:0", 0
	sc.RequireReal = cfg.RequireReal || sc.RequireReal
	if sc.StartTimeout == 0 {
		// Every back end starts (MariaDB's and PostgreSQL's installs
		// the longest): on a busy machine that takes minutes, not the
		// default 30s. A bound, not a wait: Start returns once all serve.
		sc.StartTimeout = 3 * time.Minute
	}
	start := cfg.Start
	if start == nil {
		start = startStack
	}
	st, err := start(ctx, sc)
	if err != nil {
		return out, err
	}
	defer st.Stop()
	if s, ok := st.(interface{ Summary() []string }); ok {
		out.Notes = s.Summary()
	}

	bc := bench.Config{URL: st.URL(), Requests: cfg.Requests, Concurrency: cfg.Concurrency,
		Stock: cfg.Stock, Timeout: cfg.Timeout}
	p := bench.NewProgress(cfg.Progress)
	s, err := bench.Open(ctx, bc, st, p)
	if err != nil {
		return out, err
	}
	defer s.Close()

	locks := cfg.Locks
	if len(locks) == 0 {
		locks = s.OfferedLocks()
	}
	out.NotRun = map[string]string{}
	var rungs []string
	for _, l := range locks {
		switch {
		case !s.Offers(l):
			return out, fmt.Errorf("bench: the app offers no lock %q", l)
		case l == cost.Reference:
		case s.Unavailable(l) != "":
			if sc.RequireReal {
				return out, fmt.Errorf("bench: the app cannot serve %q here: %s", l, s.Unavailable(l))
			}
			out.NotRun[l] = s.Unavailable(l)
		default:
			rungs = append(rungs, l)
		}
	}
	endpoints := []string{bench.EndpointSale, bench.EndpointTestLock}
	run := func(lock string, keep bool) error {
		for _, ep := range endpoints {
			row, err := s.Run(ctx, lock, ep, bench.Shape{})
			if err != nil {
				return err
			}
			if keep {
				out.Figures = append(out.Figures, cost.FiguresOf([]bench.Row{row})...)
			}
		}
		return nil
	}
	if err := run(cost.Reference, false); err != nil { // warm-up
		return out, err
	}
	if err := run(cost.Reference, true); err != nil {
		return out, err
	}
	for range cfg.Passes {
		for i, l := range rungs {
			if err := run(l, true); err != nil {
				return out, err
			}
			if (i+1)%cfg.Every == 0 || i == len(rungs)-1 {
				if err := run(cost.Reference, true); err != nil {
					return out, err
				}
			}
		}
		slices.Reverse(rungs)
	}
	return out, nil
}

// CostCheck is one check's report, as results/bench-check-*.json keeps it.
type CostCheck struct {
	Started  time.Time             `json:"started"`
	Load     [2]string             `json:"load"` // /proc/loadavg before and after
	Size     cost.Size             `json:"size"`
	Notes    []string              `json:"notes"`
	Figures  []cost.Figures        `json:"figures"`
	Ratios   map[string]cost.Ratio `json:"ratios"`
	NotRun   map[string]string     `json:"not_run,omitempty"`
	Failures []string              `json:"failures,omitempty"`
}

// CostsCommand is `bench check`: runs checks (RunCosts), each on a fresh
// stack, and compares their ratios with the baseline at path (with write,
// makes the median of their ratios the new baseline instead). Each
// check's report goes to dir as bench-check-*.json; the table to w.
func CostsCommand(ctx context.Context, cfg CostConfig, path string, write bool, runs int, commit, dir string, w io.Writer) error {
	var base cost.Baseline
	if !write {
		var err error
		if base, err = cost.ReadBaseline(path); err != nil {
			return err
		}
		cfg.Size = base.Size
	}
	fmt.Fprintf(w, "bench check: every rung on both endpoints, %d requests at %d concurrent, stock %d, against %s in the same run\n",
		cfg.Requests, cfg.Concurrency, cfg.Stock, cost.Reference)
	var all []map[string]cost.Ratio
	var failed []cost.Failure
	for i := range runs {
		if runs > 1 {
			fmt.Fprintf(w, "check %d of %d\n", i+1, runs)
		}
		rep := CostCheck{Started: time.Now(), Size: cfg.Size}
		rep.Load[0] = loadavg()
		cr, err := RunCosts(ctx, cfg)
		rep.Load[1] = loadavg()
		if err != nil {
			return err
		}
		rep.Notes, rep.Figures, rep.NotRun = cr.Notes, cr.Figures, cr.NotRun
		if rep.Ratios, err = cost.Ratios(cr.Figures); err != nil {
			return err
		}
		all = append(all, rep.Ratios)
		for l, why := range cr.NotRun {
			fmt.Fprintf(w, "not run: %s: %s\n", l, why)
		}
		if !write {
			b := base
			if len(cfg.Locks) > 0 || len(cr.NotRun) > 0 {
				b.Ratios = onlyLocks(b.Ratios, cfg.Locks, cr.NotRun)
			}
			failed = cost.Check(b, rep.Ratios, cost.DefaultBound)
			for _, f := range failed {
				rep.Failures = append(rep.Failures, f.String())
			}
			writeCostTable(w, rep.Ratios, b.Ratios, cost.DefaultBound)
		} else {
			writeCostTable(w, rep.Ratios, nil, cost.DefaultBound)
		}
		fmt.Fprintf(w, "load average before and after: %s; %s\n", rep.Load[0], rep.Load[1])
		if err := writeCostReport(dir, rep); err != nil {
			return err
		}
	}
	if write {
		b := cost.Baseline{Size: cfg.Size, Runs: runs, Commit: commit, Host: bench.HostInfo(), Ratios: cost.Median(all)}
		if err := cost.WriteBaseline(path, b); err != nil {
			return err
		}
		fmt.Fprintf(w, "baseline: %s (the median of %d checks)\n", path, runs)
		return nil
	}
	if err := cost.Error(failed); err != nil {
		return err
	}
	fmt.Fprintf(w, "every rung within the bound (throughput at least 1/%gx its baseline ratio, p99 at most %gx)\n",
		cost.DefaultBound.RPS, cost.DefaultBound.P99)
	return nil
}

// onlyLocks keeps the ratios of locks (all when empty) that were run.
func onlyLocks(r map[string]cost.Ratio, locks []string, notRun map[string]string) map[string]cost.Ratio {
	out := map[string]cost.Ratio{}
	for k, v := range r {
		l, _, _ := strings.Cut(k, "/")
		if (len(locks) == 0 || slices.Contains(locks, l)) && notRun[l] == "" {
			out[k] = v
		}
	}
	return out
}

// writeCostTable prints each rung's ratios, its baseline's and how far
// it moved (worse above 1) when there is a baseline.
func writeCostTable(w io.Writer, got, base map[string]cost.Ratio, b cost.Bound) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rung\treq/s ratio\tbaseline\tslower\tp99 ratio\tbaseline\tlonger\t\t")
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g := got[k]
		bs, ok := base[k]
		if !ok {
			fmt.Fprintf(tw, "%s\t%.3f\t-\t-\t%.2f\t-\t-\t\t\n", k, g.RPS, g.P99)
			continue
		}
		slower, longer := bs.RPS/g.RPS, g.P99/bs.P99
		mark := ""
		if slower > b.RPS || longer > b.P99 {
			mark = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2fx\t%.2f\t%.2f\t%.2fx\t%s\t\n", k, g.RPS, bs.RPS, slower, g.P99, bs.P99, longer, mark)
	}
	tw.Flush()
}

func writeCostReport(dir string, rep CostCheck) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench-check-"+rep.Started.UTC().Format("20060102-150405")+".json"), append(data, '\n'), 0o644)
}

// loadavg is /proc/loadavg's first three fields ("" where there is none).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
