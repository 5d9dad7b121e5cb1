package suite

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// Scenario is one set of conditions of docs/scenarios.md, as data: how to
// configure the stack, which requests arm a fault, what happens during the
// run, when a stall is a deadlock, and the ladder's verdict for each lock.
type Scenario struct {
	Name  string
	About string // one line

	// The stack, started fresh for the scenario.
	Instances    int              // app instances; 0: the stack's default (3)
	Direct       bool             // load instance 1 directly, not the load balancer
	AppArgs      []string         // flags for every instance
	InstanceArgs map[int][]string // more flags for instance i, 0-based (stack.Config.InstanceArgs)
	// Running, if set, is how a stack already running (a race's) plays
	// InstanceArgs, which it cannot be restarted with: as parameters
	// armed on a share of the requests. Without it, a scenario with
	// InstanceArgs cannot be staged.
	Running *Running
	// RedisProxy and MasterProxies put fault proxies between the
	// instances and Redis, or each Redlock master (stack.Config's).
	RedisProxy, MasterProxies bool
	// MastersAOF gives the Redlock masters an append-only file fsynced
	// before every answer (stack.Config's). CrashesMasters: the
	// scenario SIGKILLs masters, which needs redis-server: where the
	// stack would run miniredis, its pairs are skipped, saying so.
	MastersAOF, CrashesMasters bool
	// Cluster runs the stack on a Redis Cluster of that many masters
	// (stack.Config's): it needs redis-server.
	Cluster int

	// The load. Armed hits and hooks are placed by fractions of the run's
	// window, min(requests, stock): the hits sure to find stock left, since
	// a sale reaches its read-modify-write (where work= and fault=pause
	// strike) only while there is some.
	Every url.Values // query parameters on every request
	Armed url.Values // more parameters on the armed requests
	ArmAt []float64  // the armed requests, as fractions of the window
	Hooks []Hook     // actions on the stack during the run
	// StallBound: a run with no progress for longer than this after its
	// first fault is stopped and judged DEADLOCK; 0: never.
	StallBound time.Duration

	// The ladder's verdicts on /sale (docs/scenarios.md). Pairs
	// not in Expect are not run: Skip says why, SkipOther for the rest.
	Expect    map[string]string
	Skip      map[string]string
	SkipOther string
}

// Running is a scenario's instance flags played per request, on a stack
// already running (Stage): Armed on the requests at ArmAt, or on every
// ArmEvery-th (an instance's share of the round robin), instead of the
// scenario's own Armed and ArmAt (a scenario with InstanceArgs arms
// nothing else).
type Running struct {
	Armed    url.Values
	ArmAt    []float64
	ArmEvery int
}

// Hook acts on the stack once, when the run hands out the hit at fraction
// At of its window (a bench.Hook on this stack): Do is the fault, Then (if
// set) the recovery within the run; Undo, if set, puts the stack back
// after the run. Outlast holds the run's last hits back until Do has
// returned (bench.Hook's).
type Hook struct {
	At      float64
	About   string
	Do      func(ctx context.Context, t Stack) error
	Then    func(ctx context.Context, t Stack) error
	Undo    func(ctx context.Context, t Stack) error
	Outlast float64
}

// Expected returns the ladder's verdict for lock on endpoint under the
// scenario (LOST UPDATES on /testLock where /sale is OVERSOLD), or false
// with the reason the pair is not run.
func (s Scenario) Expected(lock, endpoint string) (verdict string, ok bool, skip string) {
	v, ok := s.Expect[lock]
	if !ok {
		reason := s.Skip[lock]
		if reason == "" {
			reason = s.SkipOther
		}
		if reason == "" {
			reason = "not in the ladder's table"
		}
		return "", false, reason
	}
	if strings.TrimPrefix(endpoint, "/") == bench.EndpointTestLock && v == bench.VerdictOversold {
		v = bench.VerdictLostUpdates
	}
	return v, true, ""
}

// LookupScenario returns the scenario called name, or an error that
// lists the scenarios there are.
func LookupScenario(name string) (Scenario, error) {
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("bench: unknown scenario %q (scenarios: %s)", name, strings.Join(ScenarioNames(), ", "))
}

// ScenarioNames lists the scenarios' names in order.
func ScenarioNames() []string {
	var names []string
	for _, s := range Scenarios() {
		names = append(names, s.Name)
	}
	return names
}

// pickScenarios returns the named scenarios in the order of Scenarios(),
// or all of them.
func pickScenarios(names []string) ([]Scenario, error) {
	for _, n := range names {
		if _, err := LookupScenario(n); err != nil {
			return nil, err
		}
	}
	all := Scenarios()
	if len(names) == 0 {
		return all, nil
	}
	return slices.DeleteFunc(all, func(s Scenario) bool { return !slices.Contains(names, s.Name) }), nil
}

// stackConfig is the scenario's stack: the template with free loopback
// ports, the scenario's instances and flags.
func (s Scenario) stackConfig(cfg MatrixConfig) stack.Config {
	c := cfg.Stack
	c.LBAddr, c.RedisAddr, c.AppBasePort = "127.0.0.1:0", "127.0.0.1:0", 0
	c.Instances = s.Instances
	if c.Instances == 0 {
		c.Instances = stack.DefaultInstances
	}
	c.AppArgs = append(slices.Clone(cfg.Stack.AppArgs), s.AppArgs...)
	c.InstanceArgs = nil
	if len(s.InstanceArgs) > 0 {
		c.InstanceArgs = make(map[int][]string, len(s.InstanceArgs))
		for i, a := range s.InstanceArgs {
			c.InstanceArgs[i] = slices.Clone(a)
		}
	}
	c.RedisProxy, c.MasterProxies, c.MastersAOF = s.RedisProxy, s.MasterProxies, s.MastersAOF
	c.Cluster = s.Cluster
	c.ZooKeeper, c.MariaDB, c.Etcd, c.Postgres = s.backends(cfg.Locks, cfg.Stack)
	c.RequireReal = cfg.RequireReal || cfg.Stack.RequireReal
	// Instances crash and are killed on purpose here, a few per run and
	// runs back to back: the restart backoff starts over once a restarted
	// instance has served a second, or it would grow to its 5s cap in a
	// scenario's first rows and leave the later rows' load to nginx's 502s.
	c.StableAfter = time.Second
	if cfg.Stack.Dir != "" {
		c.Dir = filepath.Join(cfg.Stack.Dir, s.Name)
	}
	return c
}

// backends are the modes of the back ends the scenario's rungs need
// (ZooKeeper, MariaDB, etcd, PostgreSQL): started only where a lock it runs (of locks,
// all when empty) is theirs, as the template says (Auto if it says
// nothing); the others off, so that a Redis scenario starts no JVM.
func (s Scenario) backends(locks []string, tmpl stack.Config) (zk, db, etcd, pg stack.Mode) {
	runs := func(names ...string) bool {
		for _, n := range names {
			if _, ok := s.Expect[n]; ok && (len(locks) == 0 || slices.Contains(locks, n)) {
				return true
			}
		}
		return false
	}
	mode := func(need bool, m stack.Mode) stack.Mode {
		switch {
		case !need:
			return stack.Off
		case m == "":
			return stack.Auto
		}
		return m
	}
	return mode(runs("zookeeper", "zk-lock"), tmpl.ZooKeeper),
		mode(runs("db-for-update", "db-optimistic"), tmpl.MariaDB),
		mode(runs("etcd", "etcd-mutex"), tmpl.Etcd),
		mode(runs("pg-advisory", "pg-advisory-xact", "pg-advisory-fenced"), tmpl.Postgres)
}

// shape is the scenario as the bench runs it, its hooks acting on top.
func (s Scenario) shape(top Stack) bench.Shape {
	sh := bench.Shape{Scenario: s.Name, Every: s.Every, Armed: s.Armed, ArmAt: s.ArmAt, StallBound: s.StallBound}
	for _, h := range s.Hooks {
		bh := bench.Hook{At: h.At, About: h.About, Outlast: h.Outlast, Do: func(ctx context.Context) error { return h.Do(ctx, top) }}
		if h.Then != nil {
			bh.Then = func(ctx context.Context) error { return h.Then(ctx, top) }
		}
		sh.Hooks = append(sh.Hooks, bh)
	}
	return sh
}
