package suite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

// A scenario staged on a stack already running (the page's races): the
// matrix starts a stack for each scenario, with the scenario's app flags;
// a running stack cannot be started again, so the flags a request can
// carry instead go on every request (-lock-ttl as lease=, -lock-wait as
// try=), an instance's flags on a share of the requests where the
// scenario says how (Scenario.Running: skew's clock as skew=), the
// faults are armed through the stack's fault key, and the hooks act on
// the stack itself, put back after the run. What a running stack cannot
// be made into (another number of instances, AOF masters, a fault proxy,
// a cluster) it cannot stage.

// ErrNotInMatrix is what Stage answers for a pair the matrix does not run
// (its error says the matrix's reason).
var ErrNotInMatrix = errors.New("the matrix does not run this pair")

// ErrCannotStage is what Stage answers when the running stack cannot play
// the scenario (its error says what the scenario needs).
var ErrCannotStage = errors.New("the running stack cannot stage this scenario")

// Staged is a scenario's run of one lock, staged on a running stack.
type Staged struct {
	// Shape is the run: the scenario's, with the app flags it sets as
	// parameters on every request, and the ladder's verdict.
	Shape bench.Shape
	// Direct: load the stack's first instance directly, not the load
	// balancer (single).
	Direct bool
	// Lease is the lease each request asks (lease=; 0: the instances'
	// own).
	Lease time.Duration
	// Size is the scenario's size in the ladder (LadderSize).
	Requests, Concurrency, Stock int

	sc  Scenario
	top Stack
}

// Undo puts the stack back after the run (the hooks' Undo).
func (st Staged) Undo(ctx context.Context) error { return undo(ctx, st.sc, st.top) }

// Stage stages the scenario's run of rung on endpoint on top, a stack
// already running with cfg (its Config), whose instances arm faults given
// its fault key (canFault). It fails with ErrNotInMatrix for a pair the
// matrix skips, and ErrCannotStage when the stack cannot play the
// scenario; both errors say why.
func (s Scenario) Stage(top Stack, cfg stack.Config, canFault bool, rung lock.Info, endpoint string) (Staged, error) {
	expected, ok, skip := s.Expected(rung.Name, endpoint)
	if !ok {
		return Staged{}, fmt.Errorf("%w: %s under %s: %s", ErrNotInMatrix, rung.Name, s.Name, skip)
	}
	needs := func(format string, args ...any) (Staged, error) {
		return Staged{}, fmt.Errorf("%w: %s needs %s", ErrCannotStage, s.Name, fmt.Sprintf(format, args...))
	}
	instances := s.Instances
	if instances == 0 {
		instances = stack.DefaultInstances
	}
	switch {
	case instances != len(top.InstanceURLs()):
		return needs("%d instance(s); this stack runs %d", instances, len(top.InstanceURLs()))
	case len(s.InstanceArgs) > 0 && s.Running == nil:
		var what []string
		for _, i := range slices.Sorted(maps.Keys(s.InstanceArgs)) {
			what = append(what, fmt.Sprintf("instance %d started with %s", i+1, strings.Join(s.InstanceArgs[i], " ")))
		}
		return needs("%s", strings.Join(what, ", "))
	case s.Cluster > 0 && cfg.Cluster != s.Cluster:
		return needs("a Redis Cluster of %d masters", s.Cluster)
	case s.RedisProxy && !cfg.RedisProxy:
		return needs("a fault proxy between the instances and Redis")
	case s.MasterProxies && !cfg.MasterProxies:
		return needs("fault proxies between the instances and the Redlock masters")
	case s.MastersAOF && !cfg.MastersAOF:
		return needs("Redlock masters that write every grant to an append-only file before answering (appendfsync always)")
	case s.CrashesMasters && !cfg.RealRedis():
		return needs("redis-server masters: it SIGKILLs them (miniredis cannot be killed or persist)")
	}

	st := Staged{sc: s, top: top, Direct: s.Direct}
	st.Requests, st.Concurrency, st.Stock = LadderSize(s.Name)
	every := url.Values{}
	for k, vs := range s.Every {
		every[k] = slices.Clone(vs)
	}
	faults := false // does a request arm one?
	armed := []url.Values{s.Every, s.Armed}
	if s.Running != nil {
		armed = append(armed, s.Running.Armed)
	}
	for _, q := range armed {
		for _, p := range faultParams {
			faults = faults || q.Has(p)
		}
	}
	for i := 0; i < len(s.AppArgs); i++ {
		flag, value := s.AppArgs[i], ""
		if i+1 < len(s.AppArgs) && !strings.HasPrefix(s.AppArgs[i+1], "-") {
			value = s.AppArgs[i+1]
			i++
		}
		switch flag {
		case "-faults": // the stack's fault key stands for it
		case "-lock-ttl":
			d, err := time.ParseDuration(value)
			if err != nil {
				return needs("instances started with -lock-ttl %s", value)
			}
			if rung.Lease {
				every.Set("lease", d.String())
				st.Lease = d
			}
		case "-lock-wait":
			if _, err := time.ParseDuration(value); err != nil {
				return needs("instances started with -lock-wait %s", value)
			}
			if rung.Try {
				every.Set("try", value)
			}
		default:
			return needs("instances started with %s", strings.TrimSpace(flag+" "+value))
		}
	}
	if faults && !canFault {
		return needs("instances that arm the faults its requests ask for (the stack's fault key, or -faults)")
	}
	if len(s.Hooks) > 0 && top == nil {
		return needs("the stack itself, for %s", s.Hooks[0].About)
	}
	st.Shape = s.shape(top)
	st.Shape.Every, st.Shape.Expected = every, expected
	if s.Running != nil {
		st.Shape.Armed, st.Shape.ArmAt, st.Shape.ArmEvery = s.Running.Armed, s.Running.ArmAt, s.Running.ArmEvery
	}
	return st, nil
}

// faultParams are the query parameters that arm a fault (the app's).
var faultParams = []string{"work", "takeover", "fault", "pause", "until", "skew"}

// LadderSize is the size of a scenario's runs in the ladder of flaws
// (the demo's, the page's): e2e's TestMatrix's stock and concurrency,
// every fault striking while there is stock to oversell, twice the stock
// in requests (the rest only read sold out); crash-wait at 100
// concurrent, since del-setnx's double grant needs many waiters polling
// when a dead holder's lock expires.
func LadderSize(scenario string) (requests, concurrency, stock int) {
	if scenario == "crash-wait" {
		return 800, 100, 500
	}
	return 600, 40, 300
}
