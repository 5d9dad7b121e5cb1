package suite_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// The ladder of flaws is the matrix's: every rung of the ladder, under a
// scenario (or two in a row) that gives it a verdict, the unsafe rungs failing
// there as the ladder says.
func TestFlawsAreTheMatrixPairs(t *testing.T) {
	var locks []string
	for _, p := range suite.Flaws() {
		v, ok, skip := scenarioNamed(t, p.Scenario).Expected(p.Lock, bench.EndpointSale)
		if !ok {
			t.Errorf("%s under %s: the matrix skips it (%s)", p.Lock, p.Scenario, skip)
		}
		if p.Lock == "none" || p.Lock == "setnx" || p.Lock == "check-del" {
			if v == bench.VerdictSafe {
				t.Errorf("%s under %s: %s: that scenario does not show its flaw", p.Lock, p.Scenario, v)
			}
		}
		if len(locks) == 0 || locks[len(locks)-1] != p.Lock {
			locks = append(locks, p.Lock)
		}
	}
	ladder := slices.DeleteFunc(suite.LadderLocks(), func(l string) bool { return !slices.Contains(locks, l) })
	if !slices.Equal(locks, ladder) || len(locks) < 20 {
		t.Errorf("the flaws' locks %v, want each rung of %v once, in ladder order", locks, suite.LadderLocks())
	}
}

// RunMatrix with Pairs runs those pairs only, each scenario on its own
// stack, sized by Size where it says so.
func TestRunMatrixRunsOnlyThePairs(t *testing.T) {
	fs := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	pairs := []suite.Pair{{"check-pause", "check-del"}, {"crash", "setnx"}, {"slow", "lua"}, {"slow", "atomic"}}
	rows, skips, err := suite.RunMatrix(t.Context(), suite.MatrixConfig{
		Pairs:    pairs,
		Requests: 200, Concurrency: 10, Stock: 50, Timeout: 10 * time.Second,
		Size: func(scenario string) (int, int, int) {
			if scenario == "slow" {
				return 120, 0, 0
			}
			return 0, 0, 0
		},
		Stack: stack.Config{Dir: t.TempDir(), Redis: stack.Embedded},
		Start: fs.start,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []suite.Pair
	for _, r := range rows {
		got = append(got, suite.Pair{Scenario: r.Scenario, Lock: r.Lock})
		if r.Verdict != r.Expected {
			t.Errorf("%s %s: %s, want %s", r.Scenario, r.Lock, r.Verdict, r.Expected)
		}
		if want := map[bool]int{true: 120, false: 200}[r.Scenario == "slow"]; r.Requests != want && !r.Stopped {
			t.Errorf("%s %s: %d requests, want %d", r.Scenario, r.Lock, r.Requests, want)
		}
	}
	// In the order of the scenarios, each scenario's locks as given.
	want := []suite.Pair{{"slow", "lua"}, {"slow", "atomic"}, {"crash", "setnx"}, {"check-pause", "check-del"}}
	if !slices.Equal(got, want) || len(skips) != 0 || len(fs.started) != 3 {
		t.Errorf("ran %v, skipped %v on %d stacks; want %v on 3", got, skips, len(fs.started), want)
	}
}

// With Pairs, a scenario's stack starts only the back ends its paired
// locks need: slow pairs no lock of ZooKeeper, etcd or MariaDB.
func TestRunMatrixPairsStartOnlyTheirBackends(t *testing.T) {
	fs := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	_, _, err := suite.RunMatrix(t.Context(), suite.MatrixConfig{
		Pairs:    []suite.Pair{{"slow", "lua"}, {"pause-session", "etcd"}},
		Requests: 60, Concurrency: 5, Stock: 20, Timeout: 10 * time.Second,
		Stack: stack.Config{Dir: t.TempDir(), Redis: stack.Embedded},
		Start: fs.start,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][3]stack.Mode{
		"slow":          {stack.Off, stack.Off, stack.Off},
		"pause-session": {stack.Off, stack.Off, stack.Auto},
	} {
		c := fs.started[name].cfg
		if got := [3]stack.Mode{c.ZooKeeper, c.MariaDB, c.Etcd}; got != want {
			t.Errorf("%s: back ends (zookeeper, mariadb, etcd) %v, want %v", name, got, want)
		}
	}
}
