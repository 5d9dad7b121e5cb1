package suite

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// Skip is a pair of scenario and lock the matrix does not run, and why.
type Skip struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Reason   string `json:"reason"`
}

// MatrixConfig describes a strategies x scenarios run. Zero values take
// the documented defaults.
type MatrixConfig struct {
	// Scenarios to run, by name; default every one of Scenarios().
	Scenarios []string
	// Locks to run; default LadderLocks(). Pairs the ladder gives no
	// verdict for are skipped, each with its reason.
	Locks []string
	// Pairs, when set, are the only pairs run, each scenario with its own
	// locks (Flaws, say), in place of Scenarios x Locks.
	Pairs []Pair
	// Endpoints to load; default only "sale".
	Endpoints []string
	// Requests, Concurrency, Stock and Timeout of each run, as in bench.Config.
	Requests    int
	Concurrency int
	Stock       int
	Timeout     time.Duration
	// Size, when set, sizes a scenario's runs its own way (crash-wait
	// needs many waiters at once, say): the requests, concurrency and
	// stock of its runs, a zero keeping the field above.
	Size func(scenario string) (requests, concurrency, stock int)

	// Stack is the template of each scenario's stack: AppBinary,
	// NginxConf, the Redis and LB modes, Log, StartTimeout, AppArgs (before
	// the scenario's). Addresses are always free loopback ports, so a
	// matrix never collides with a stack already up; Dir "" gives each
	// stack a temporary run dir, else each gets Dir/<scenario>.
	Stack stack.Config
	// RequireReal is passed to every stack: no embedded stand-ins.
	RequireReal bool
	// Start starts a stack; default stack.Start. Tests put fakes here.
	// With Lanes it is called from several goroutines at once.
	Start func(ctx context.Context, cfg stack.Config) (Stack, error)
	// Lanes, when above 1, is how many scenarios' stacks run at once
	// (with Scenarios, not Pairs); 0 or 1: one after the other.
	Lanes int

	// Progress receives a line per scenario and per run (nil = none).
	Progress io.Writer
	// HistoryDir receives the HTML view of each illegal history, as in
	// bench.Config; CompareMatrix defaults it to its report dir.
	HistoryDir string
	// Timelines, when set, draws the timelines of rows for the HTML
	// report (race.ReportTimelines: package race, which the app links,
	// is not this one's to import).
	Timelines func([]bench.Row) template.HTML
}

// RunMatrix runs every pair of cfg.Scenarios and cfg.Locks the ladder gives
// a verdict for: for each scenario a fresh stack, then each of its locks,
// one run after the other, each row carrying the ladder's expected verdict
// beside the one measured. It returns the rows, the pairs skipped with
// their reasons, and the first error (with the rows finished before it;
// with Lanes, every lane's error, and no scenario starts after one).
func RunMatrix(ctx context.Context, cfg MatrixConfig) ([]bench.Row, []Skip, error) {
	scenarios, err := pickScenarios(cfg.Scenarios)
	if err != nil {
		return nil, nil, err
	}
	locks := cfg.Locks
	if len(locks) == 0 {
		locks = LadderLocks()
	}
	var paired map[string][]string // by scenario, with cfg.Pairs
	if len(cfg.Pairs) > 0 {
		if scenarios, paired, err = pairsOf(cfg.Pairs); err != nil {
			return nil, nil, err
		}
	} else if cfg.Lanes > 1 && len(scenarios) > 1 {
		return runMatrixLanes(ctx, cfg, scenarios)
	}
	start := cfg.Start
	if start == nil {
		start = startStack
	}
	base, err := cfg.base()
	if err != nil {
		return nil, nil, err
	}

	p := bench.NewProgress(cfg.Progress)
	var rows []bench.Row
	var skips []Skip
	for _, sc := range scenarios {
		var pairs []matrixPair
		locks := locks
		if paired != nil {
			locks = paired[sc.Name]
		}
		for _, lock := range locks {
			for _, ep := range base.Endpoints {
				v, ok, reason := sc.Expected(lock, ep)
				if !ok {
					if ep == base.Endpoints[0] {
						skips = append(skips, Skip{Scenario: sc.Name, Lock: lock, Reason: reason})
					}
					continue
				}
				pairs = append(pairs, matrixPair{lock, ep, v})
				p.Fit(sc.Name+" "+lock, ep)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		scCfg := cfg
		scCfg.Locks = locks // its back ends: only those its locks need
		stackCfg := sc.stackConfig(scCfg)
		if sc.CrashesMasters && !stackCfg.RealRedis() {
			for _, pr := range pairs {
				if pr.endpoint == base.Endpoints[0] {
					skips = append(skips, Skip{Scenario: sc.Name, Lock: pr.lock,
						Reason: "unavailable here: it crashes Redlock masters, which needs redis-server (miniredis cannot be killed or persist)"})
				}
			}
			continue
		}
		p.Note(fmt.Sprintf("%s: %s", sc.Name, sc.About))
		top, err := start(ctx, stackCfg)
		if err != nil {
			return rows, skips, fmt.Errorf("bench: scenario %s: starting the stack: %w", sc.Name, err)
		}
		scBase, err := cfg.sized(base, sc.Name)
		if err != nil {
			top.Stop()
			return rows, skips, fmt.Errorf("bench: scenario %s: %w", sc.Name, err)
		}
		scRows, scSkips, runErr := runScenario(ctx, sc, top, scBase, pairs, p)
		rows = append(rows, scRows...)
		skips = append(skips, scSkips...)
		if err := top.Stop(); err != nil && runErr == nil {
			runErr = fmt.Errorf("bench: scenario %s: stopping the stack: %w", sc.Name, err)
		}
		if runErr != nil {
			return rows, skips, runErr
		}
	}
	return rows, skips, nil
}

// base is the run configuration the matrix's scenarios share, defaults
// applied and checked, on a stand-in URL: each scenario has its own.
func (cfg MatrixConfig) base() (bench.Config, error) {
	eps := cfg.Endpoints
	if len(eps) == 0 {
		eps = []string{bench.EndpointSale}
	}
	return bench.Config{
		URL: "http://127.0.0.1:1", Locks: cfg.Locks, Endpoints: eps,
		Requests: cfg.Requests, Concurrency: cfg.Concurrency, Stock: cfg.Stock, Timeout: cfg.Timeout,
		HistoryDir: cfg.HistoryDir,
	}.Normalize()
}

// sized is base with the scenario's own size (MatrixConfig.Size).
func (cfg MatrixConfig) sized(base bench.Config, scenario string) (bench.Config, error) {
	if cfg.Size == nil {
		return base, nil
	}
	n, c, stock := cfg.Size(scenario)
	if n > 0 {
		base.Requests = n
	}
	if c > 0 {
		base.Concurrency = c
	}
	if stock > 0 {
		base.Stock = stock
	}
	return base.Normalize()
}

// CompareMatrix runs the strategies x scenarios matrix (RunMatrix), prints
// the rows and the grid of verdicts to w, and writes the matrix reports into
// dir, saying where. The reports' notes name what the first stack ran
// (redis-server, nginx, with versions) when the stack can say
// (Summary() []string, as *stack.Stack does). When a run fails it still
// prints and writes what finished before the error.
func CompareMatrix(ctx context.Context, cfg MatrixConfig, dir string, w io.Writer) ([]bench.Row, []Skip, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	var notes []string
	start := cfg.Start
	if start == nil {
		start = startStack
	}
	var mu sync.Mutex // over notes: lanes start stacks at once
	cfg.Start = func(ctx context.Context, c stack.Config) (Stack, error) {
		t, err := start(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		if s, ok := t.(interface{ Summary() []string }); ok && err == nil && notes == nil {
			notes = append([]string{"each scenario on a fresh stack on free loopback ports; the first:"}, s.Summary()...)
		}
		return t, err
	}
	rows, skips, runErr := RunMatrix(ctx, cfg)
	took := time.Since(started)
	if len(rows) == 0 && len(skips) == 0 {
		return nil, nil, runErr
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
		if err := bench.WriteTable(w, rows); err != nil {
			return rows, skips, err
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, bench.LegendFor(rows))
	}
	fmt.Fprintln(w)
	if err := WriteGrid(w, rows, skips, took); err != nil {
		return rows, skips, err
	}

	base, _ := cfg.base()
	meta := bench.Meta{
		Started: started, Requests: base.Requests, Concurrency: base.Concurrency, Stock: base.Stock,
		Host: bench.HostInfo(), Notes: notes,
	}
	jsonPath, mdPath, err := WriteMatrixReports(dir, rows, skips, meta, took)
	if err != nil {
		return rows, skips, err
	}
	var timelines template.HTML
	if cfg.Timelines != nil {
		timelines = cfg.Timelines(rows)
	}
	htmlPath, err := WriteMatrixHTML(jsonPath, rows, skips, meta, took, timelines)
	if err != nil {
		return rows, skips, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n         %s\n", htmlPath, jsonPath, mdPath)
	return rows, skips, runErr
}
