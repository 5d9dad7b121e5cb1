package suite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/stack"
)

// LadderConfig is `make demo`'s ladder of flaws: each rung under the
// scenario that shows its flaw (Flaws), each scenario on a fresh stack
// of its own, made from Stack, on free ports.
type LadderConfig struct {
	Stack stack.Config
	// Plain are the throughput table's rows: the normal scenario's pairs
	// are taken from them where it ran them, and a lock they could not
	// run (its server missing) is skipped.
	Plain []bench.Row
	// HistoryDir receives the HTML view of each illegal history.
	HistoryDir string
	// Progress, when a terminal, shows one line that follows the runs
	// (nil: none); the runs' lines are written once all are done, in the
	// ladder's order, by WriteLadder.
	Progress io.Writer
	// Start starts a stack; default stack.Start. Tests put fakes here.
	Start func(ctx context.Context, cfg stack.Config) (Stack, error)
	// Lanes is how many stacks run at once (ladderJobs: a pair, or a
	// scenario's pairs that share a back end, on each); 0: ladderLanes.
	Lanes int
}

// RunLadder runs the ladder of flaws and returns its rows (the throughput
// table's included), the pairs skipped and how long it took.
func RunLadder(ctx context.Context, cfg LadderConfig) ([]bench.Row, []Skip, time.Duration, error) {
	normal, err := LookupScenario(bench.ScenarioNormal)
	if err != nil {
		return nil, nil, 0, err
	}
	var rows []bench.Row
	var skips []Skip
	var pairs []Pair
	for _, p := range Flaws() {
		i := slices.IndexFunc(cfg.Plain, func(r bench.Row) bool { return r.Lock == p.Lock && r.Endpoint == bench.EndpointSale })
		switch {
		case p.Scenario == normal.Name && i >= 0 && cfg.Plain[i].NotRun == "":
			r := cfg.Plain[i]
			r.Expected, _, _ = normal.Expected(r.Lock, r.Endpoint)
			rows = append(rows, r)
		case i >= 0 && cfg.Plain[i].NotRun != "":
			// Its server is missing here: no fresh stack has it either.
			skips = append(skips, Skip{Scenario: p.Scenario, Lock: p.Lock, Reason: "unavailable here: " + cfg.Plain[i].NotRun})
		default:
			pairs = append(pairs, p)
		}
	}
	tmpl := cfg.Stack
	tmpl.Races, tmpl.Log = nil, nil // no page on these stacks, no log of their start
	started := time.Now()
	jobs, err := ladderJobs(pairs)
	if err != nil {
		return nil, nil, 0, err
	}
	var progress io.Writer
	if cfg.Progress != nil && bench.IsTerminal(cfg.Progress) {
		progress = &ticker{w: cfg.Progress}
		defer progress.(*ticker).clear()
	}
	lanes := cfg.Lanes
	if lanes <= 0 {
		lanes = ladderLanes
	}
	got, more, err := runLanes(ctx, jobs, lanes, func(ctx context.Context, j ladderJob) ([]bench.Row, []Skip, error) {
		return RunMatrix(ctx, MatrixConfig{Pairs: j.pairs, Size: LadderSize, Stack: jobStack(tmpl, j), Progress: progress,
			HistoryDir: cfg.HistoryDir, Start: cfg.Start})
	})
	rows, skips = append(rows, got...), append(skips, more...)
	inLadderOrder(rows, skips)
	return rows, skips, time.Since(started), err
}

// ticker shows the latest whole line written to it on one terminal line,
// redrawn in place: the ladder's lanes report side by side, and their
// lines, one per run, would interleave.
type ticker struct {
	mu   sync.Mutex
	w    io.Writer
	part []byte
}

func (t *ticker) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := slices.Index(t.part, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(t.part[:i]), "\r", " "))
		t.part = t.part[i+1:]
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > 100 {
			line = string(r[:99]) + "…"
		}
		fmt.Fprintf(t.w, "\r\033[K  %s", line)
	}
	return len(p), nil
}

func (t *ticker) clear() { fmt.Fprint(t.w, "\r\033[K") }

// maxFlaw is the most characters of a flaw a ladder line shows.
const maxFlaw = 72

// WriteLadder writes the ladder's runs for the terminal, scenario by
// scenario in the ladder's order (Flaws), each with its verdict against
// the ladder's, a figure that shows it and the lock's flaw in one line
// (its Info.Flaw, cut to fit); then the pairs skipped and the summary.
func WriteLadder(w io.Writer, rows []bench.Row, skips []Skip, took time.Duration) error {
	order := map[Pair]int{}
	for i, p := range Flaws() {
		order[p] = i + 1
	}
	rows = slices.Clone(rows)
	rank := func(r bench.Row) int {
		if i := order[Pair{r.Scenario, r.Lock}]; i > 0 {
			return i
		}
		return len(order) + 1
	}
	slices.SortStableFunc(rows, func(a, b bench.Row) int { return rank(a) - rank(b) })
	lines := [][]string{{"scenario", "lock", "verdict", "shown by", "the lock's flaw"}, nil}
	last := ""
	for _, r := range rows {
		sc := r.Scenario
		if sc == last {
			sc = ""
		}
		last = r.Scenario
		lines = append(lines, []string{sc, label(r.Lock, r.Endpoint), gridCell(r), figure(r), cut(StoryFor(r.Lock, "").Flaw, maxFlaw)})
	}
	bw := bufio.NewWriter(w)
	report.Aligned(bw, lines, nil)
	g := newGrid(rows, skips, gridCell)
	writeSkipped(bw, g, "")
	sum := summarize(rows, skips, took)
	fmt.Fprintf(bw, "\n%s\n", sum.line())
	for _, u := range sum.Unexpected {
		fmt.Fprintf(bw, "  %s %s\n", bench.MarkUnexpected, u)
	}
	return bw.Flush()
}

// figure is the run's figure that shows its verdict.
func figure(r bench.Row) string {
	var f []string
	switch {
	case r.Oversold > 0:
		f = append(f, fmt.Sprintf("oversold %d", r.Oversold))
	case r.LostUpdates > 0:
		f = append(f, fmt.Sprintf("lost %d", r.LostUpdates))
	case r.Verdict == bench.VerdictDeadlock:
		f = append(f, fmt.Sprintf("stalled %.1fs", r.StallMs/1000))
	default:
		f = append(f, fmt.Sprintf("ok %d", r.OK))
	}
	if r.Overlaps > 0 {
		f = append(f, fmt.Sprintf("%d overlaps", r.Overlaps))
	}
	return strings.Join(f, ", ")
}

// cut is s cut to at most n runes, an ellipsis where cut.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
