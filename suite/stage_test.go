package suite_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// runningStack is a running stack as Stage sees it: its instances, and
// masters to stop and start.
type runningStack struct {
	n   int
	mu  sync.Mutex // the masters stop and start at once
	log []string
}

func (r *runningStack) URL() string { return "http://127.0.0.1:1" }
func (r *runningStack) InstanceURLs() []string {
	return slices.Repeat([]string{"http://127.0.0.1:2"}, r.n)
}
func (r *runningStack) Stop() error { return errors.New("a staged run never stops the stack") }
func (r *runningStack) StopMaster(i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "stop "+string(rune('0'+i)))
	return nil
}
func (r *runningStack) StartMaster(i int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "start "+string(rune('0'+i)))
	return nil
}

// Stage turns a scenario's app flags into parameters on every request,
// for the rungs that take them, keeps its faults and hooks, and says what
// a running stack cannot be made into.
func TestStage(t *testing.T) {
	rungs := map[string]lock.Info{}
	for _, r := range ladder.New(ladder.Backends{}, lock.Options{}, lock.RedlockOptions{}).Rungs() {
		rungs[r.Name] = r
	}
	top := &runningStack{n: 3}
	real := stack.Config{Redis: stack.Real, Instances: 3}
	stage := func(scenario, lock string, cfg stack.Config, canFault bool) (suite.Staged, error) {
		return scenarioNamed(t, scenario).Stage(top, cfg, canFault, rungs[lock], "sale")
	}

	st, err := stage("slow", "lua", real, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (url.Values{"lease": {"200ms"}, "try": {"1s"}}); !equalValues(st.Shape.Every, want) ||
		st.Shape.Armed.Get("work") != "600ms" || st.Shape.Expected != "OVERSOLD" || st.Lease != 200*time.Millisecond ||
		st.Shape.Scenario != "slow" || st.Shape.StallBound != 3*time.Second || len(st.Shape.ArmAt) != 4 {
		t.Errorf("slow/lua: %+v", st)
	}
	if st.Requests != 600 || st.Concurrency != 40 || st.Stock != 300 {
		t.Errorf("slow/lua: size %d/%d/%d, want the ladder's 600/40/300", st.Requests, st.Concurrency, st.Stock)
	}
	// atomic takes neither a lease nor a wait bound; setnx no lease.
	if st, err := stage("slow", "atomic", real, true); err != nil || len(st.Shape.Every) != 0 || st.Lease != 0 {
		t.Errorf("slow/atomic: %+v, %v: want nothing on every request", st.Shape.Every, err)
	}
	if st, err := stage("crash", "setnx", real, true); err != nil || !equalValues(st.Shape.Every, url.Values{"try": {"1s"}}) ||
		st.Shape.Expected != "DEADLOCK" {
		t.Errorf("crash/setnx: %+v, %v", st.Shape, err)
	}
	st, err = stage("crash-wait", "del-setnx", real, true)
	if want := (url.Values{"lease": {"200ms"}, "try": {"1s"}, "work": {"3ms"}, "wait": {"fixed"}, "takeover": {"40ms"}}); err != nil ||
		!equalValues(st.Shape.Every, want) || st.Requests != 800 || st.Concurrency != 100 || st.Stock != 500 {
		t.Errorf("crash-wait/del-setnx: %+v (%d/%d/%d), %v", st.Shape.Every, st.Requests, st.Concurrency, st.Stock, err)
	}

	// skew's instance 3, started with -clock-skew 2s in the matrix, is
	// skew=2s on every third request of the window here.
	st, err = stage("skew", "getset", real, true)
	if want := (url.Values{"lease": {"200ms"}, "try": {"1s"}, "work": {"5ms"}}); err != nil ||
		!equalValues(st.Shape.Every, want) || !equalValues(st.Shape.Armed, url.Values{"skew": {"2s"}}) || st.Shape.Expected != "OVERSOLD" {
		t.Fatalf("skew/getset: %+v, %v", st.Shape, err)
	}
	if st.Shape.ArmEvery != 3 || len(st.Shape.ArmAt) != 0 {
		t.Errorf("skew/getset: armed every %d-th hit and at %v, want every third and no fraction", st.Shape.ArmEvery, st.Shape.ArmAt)
	}

	// The hooks act on the stack, and Undo puts it back.
	st, err = stage("masters-down", "redlock", real, false)
	if err != nil || len(st.Shape.Hooks) != 1 {
		t.Fatalf("masters-down/redlock: %+v, %v", st.Shape, err)
	}
	if err := st.Shape.Hooks[0].Do(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := st.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(top.log, ","); !strings.Contains(got, "stop 0") || !strings.Contains(got, "start 1") || len(top.log) != 4 {
		t.Errorf("masters-down's hook and undo: %s", got)
	}

	for _, tc := range []struct {
		scenario, lock string
		cfg            stack.Config
		canFault       bool
		err            error
		says           string
	}{
		{"slow", "none", real, true, suite.ErrNotInMatrix, "unsafe with no fault at all"},
		{"check-pause", "setnx", real, true, suite.ErrNotInMatrix, "only check-del has a point between check and delete"},
		{"single", "local", real, true, suite.ErrCannotStage, "single needs 1 instance(s); this stack runs 3"},
		{"skew", "getset", real, false, suite.ErrCannotStage, "fault key"},
		{"majority-crash", "redlock", stack.Config{Redis: stack.Embedded}, true, suite.ErrCannotStage, "redis-server masters"},
		{"majority-crash-aof", "redlock", real, true, suite.ErrCannotStage, "append-only file"},
		{"crash", "setnx", real, false, suite.ErrCannotStage, "fault key"},
	} {
		_, err := stage(tc.scenario, tc.lock, tc.cfg, tc.canFault)
		if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s/%s: %v, want %v saying %q", tc.scenario, tc.lock, err, tc.err, tc.says)
		}
	}
}

func equalValues(a, b url.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
