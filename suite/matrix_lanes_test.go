package suite_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// The matrix with lanes runs that many scenarios' stacks at once, never
// more, and gives the rows and skips it gives one scenario after the
// other, in the same order; its progress lines come whole, each run's
// line once.
func TestRunMatrixLanes(t *testing.T) {
	const lanes = 3
	// Four scenarios quick on fakes:
	// the whole matrix takes a minute here, one after the other.
	scenarios := []string{"single", "skew", "masters-down", "masters-down-3"}
	run := func(lanes int, start func(context.Context, stack.Config) (suite.Stack, error), progress io.Writer) ([]bench.Row, []suite.Skip) {
		t.Helper()
		rows, skips, err := suite.RunMatrix(t.Context(), suite.MatrixConfig{
			Scenarios: scenarios,
			Requests:  100, Concurrency: 10, Stock: 30, Timeout: 10 * time.Second,
			// Embedded: the fakes cannot crash masters.
			Stack:    stack.Config{Dir: t.TempDir(), AppArgs: []string{"-retry", "10ms"}, Redis: stack.Embedded},
			Start:    start,
			Lanes:    lanes,
			Progress: progress,
		})
		if err != nil {
			t.Fatal(err)
		}
		return rows, skips
	}
	one := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	wantRows, wantSkips := run(0, one.start, nil)

	fs := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	var (
		mu       sync.Mutex
		up, most int
		full     = make(chan struct{}) // closed once lanes stacks are up at once
		once     sync.Once
	)
	start := func(ctx context.Context, cfg stack.Config) (suite.Stack, error) {
		s, err := fs.start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		up++
		most = max(most, up)
		if up == lanes {
			once.Do(func() { close(full) })
		}
		mu.Unlock()
		// The first stacks wait for each other: run one at a time, they
		// would never all be up.
		select {
		case <-full:
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("%d stacks up at once after a minute, want %d", up, lanes)
		}
		return &laneStack{fakeStack: s.(*fakeStack), stopped: func() {
			mu.Lock()
			up--
			mu.Unlock()
		}}, nil
	}
	var progress bytes.Buffer
	rows, skips := run(lanes, start, &progress)
	if most != lanes || up != 0 {
		t.Errorf("%d stacks up at once at most, %d left up; want %d, 0", most, up, lanes)
	}
	type got struct{ scenario, lock, verdict, expected string }
	of := func(rows []bench.Row) (g []got) {
		for _, r := range rows {
			g = append(g, got{r.Scenario, r.Lock, r.Verdict, r.Expected})
		}
		return g
	}
	if !slices.Equal(of(rows), of(wantRows)) || !slices.Equal(skips, wantSkips) {
		t.Errorf("with %d lanes: rows %v, skips %v\none at a time: rows %v, skips %v", lanes, of(rows), skips, of(wantRows), wantSkips)
	}
	if len(fs.started) != len(one.started) {
		t.Errorf("%d stacks with lanes, %d without", len(fs.started), len(one.started))
	}
	// Each run's line once and whole: its scenario, lock and verdict on it.
	for _, r := range rows {
		re := r.Scenario + " " + r.Lock + "/sale"
		var n int
		for _, l := range strings.Split(progress.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), re+" ") && strings.Contains(l, r.Verdict) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d whole lines in the progress, want 1:\n%s", re, n, progress.String())
		}
	}
}
