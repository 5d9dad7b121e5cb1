package suite

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"

	"github.com/lockladder/lockladder/bench"
)

// matrixSlowest are the matrix's scenarios whose stacks take longest,
// longest first: an instance to restart after each crash (crash), a back
// end to start and holders frozen 2.5s each (pause-session), a business
// of 600ms to wait out per armed request (slow), every lock's full run
// (normal), the back ends restarted (backend-restart), PostgreSQL to
// start (session-cut), the stalls bounded at 6s of fair and cohort under
// pause, crash-wait at the e2e matrix's full size. With lanes they start
// first, so that the lanes end about together; the others follow in
// order.
var matrixSlowest = []string{"crash", "pause-session", "slow", "normal", "backend-restart", "session-cut", "pause", "crash-wait", "check-pause"}

// runMatrixLanes is RunMatrix with cfg.Lanes scenarios at once, each on
// its stack as it would run alone (RunMatrix of that one scenario): no two
// share a stack, a Redis or a key. The rows and skips come back in the
// scenarios' order; each scenario's progress lines are written whole, a
// scenario's own in order.
func runMatrixLanes(ctx context.Context, cfg MatrixConfig, scenarios []Scenario) ([]bench.Row, []Skip, error) {
	rank := func(sc Scenario) int {
		if i := slices.Index(matrixSlowest, sc.Name); i >= 0 {
			return i
		}
		return len(matrixSlowest)
	}
	jobs := slices.Clone(scenarios)
	slices.SortStableFunc(jobs, func(a, b Scenario) int { return rank(a) - rank(b) })
	var mu sync.Mutex // over cfg.Progress
	rows, skips, err := runLanes(ctx, jobs, cfg.Lanes, func(ctx context.Context, sc Scenario) ([]bench.Row, []Skip, error) {
		one := cfg
		one.Scenarios, one.Lanes = []string{sc.Name}, 0
		var lines, log *wholeLines
		if cfg.Progress != nil {
			lines = &wholeLines{mu: &mu, w: cfg.Progress}
			one.Progress = lines
		}
		if cfg.Stack.Log != nil {
			// Its stack's lines, named: the stacks start side by side.
			log = &wholeLines{mu: &mu, w: cfg.Stack.Log, prefix: sc.Name + " "}
			one.Stack.Log = log
		}
		r, s, err := RunMatrix(ctx, one)
		lines.flush()
		log.flush()
		return r, s, err
	})
	order := map[string]int{}
	for i, sc := range scenarios {
		order[sc.Name] = i
	}
	slices.SortStableFunc(rows, func(a, b bench.Row) int { return order[a.Scenario] - order[b.Scenario] })
	slices.SortStableFunc(skips, func(a, b Skip) int { return order[a.Scenario] - order[b.Scenario] })
	return rows, skips, err
}

// wholeLines writes to w, under mu, only whole lines, each after prefix:
// the lanes' lines do not break into each other.
type wholeLines struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	part   []byte
}

func (l *wholeLines) Write(p []byte) (int, error) {
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := l.line(l.part[:i+1]); err != nil {
			return len(p), err
		}
		l.part = l.part[i+1:]
	}
}

func (l *wholeLines) line(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(append([]byte(l.prefix), b...))
	return err
}

// flush writes what is left of a last line.
func (l *wholeLines) flush() {
	if l == nil || len(l.part) == 0 {
		return
	}
	l.line(append(l.part, '\n'))
	l.part = nil
}
