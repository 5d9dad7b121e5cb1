package suite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// laneStack is a fake stack that says when it stops.
type laneStack struct {
	*fakeStack
	stopped func()
}

func (s *laneStack) Stop() error {
	s.stopped()
	return s.fakeStack.Stop()
}

// The ladder runs lanes stacks at once, never more: each pair on a stack
// and in a run dir of its own, but session-cut's three PostgreSQL rungs,
// which share one; every pair gets the verdict the ladder expects, and
// the rows come back in the ladder's order (majority-crash, which the
// fakes cannot stage, skipped with its reason).
func TestRunLadderRunsLanesAtOnce(t *testing.T) {
	const lanes = 3
	fs := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	var (
		mu       sync.Mutex
		up, most int
		dirs     []string
		stacks   = map[string]int{}    // by scenario
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
		dirs = append(dirs, cfg.Dir)
		stacks[filepath.Base(cfg.Dir)]++ // the run dir's last element is the scenario
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
	dir := t.TempDir()
	rows, skips, _, err := suite.RunLadder(t.Context(), suite.LadderConfig{
		Stack: stack.Config{Dir: dir, Redis: stack.Embedded}, // majority-crash skipped: the fakes crash no master
		Start: start, Lanes: lanes,
	})
	if err != nil {
		t.Fatal(err)
	}
	if most != lanes || up != 0 {
		t.Errorf("%d stacks up at once at most, %d left up; want %d, 0", most, up, lanes)
	}
	var got []suite.Pair
	for _, r := range rows {
		got = append(got, suite.Pair{Scenario: r.Scenario, Lock: r.Lock})
		if r.Verdict != r.Expected || r.Expected == "" {
			t.Errorf("%s %s: %s, want %q", r.Scenario, r.Lock, r.Verdict, r.Expected)
		}
	}
	mc := suite.Pair{Scenario: "majority-crash", Lock: "redlock"}
	want := slices.DeleteFunc(suite.Flaws(), func(p suite.Pair) bool { return p == mc })
	if !slices.Equal(got, want) || len(skips) != 1 || skips[0].Scenario != mc.Scenario {
		t.Errorf("rows %v, skipped %v; want every pair of the ladder in its order, %v skipped", got, skips, mc)
	}
	// 23 pairs, session-cut's 3 on one stack.
	if n := len(slices.Compact(slices.Sorted(slices.Values(dirs)))); n != len(dirs) || n != len(want)-2 {
		t.Errorf("%d stacks in %d run dirs, want %d in as many: %v", len(dirs), n, len(want)-2, dirs)
	}
	for sc, want := range map[string]int{"session-cut": 1, "pause": 6, "pause-session": 3, "slow": 3} {
		if n := stacks[sc]; n != want {
			t.Errorf("%s on %d stacks, want %d", sc, n, want)
		}
	}
}
