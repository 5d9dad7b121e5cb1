package explore

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
)

// Targets are the Redis rungs on one server, in ladder order, each with
// the faults of the scenario the ladder names for its flaw
// (docs/ladder.md), and made by the constructor ladder.New calls.
var Targets = labTargets(
	Target{Name: "setnx", New: rung(lock.NewSetNX), Faults: Crash | Idle},
	Target{Name: "setnx-expire", New: rung(lock.NewSetNXExpire), Faults: Crash | Idle},
	Target{Name: "setnx-px", New: rung(lock.NewSetNXPX), Faults: Late},
	Target{Name: "check-del", New: rung(lock.NewCheckDel), Faults: Late},
	Target{Name: "lua", New: rung(lock.NewLua), Faults: Slow},
	Target{Name: "del-setnx", New: rung(lock.NewDelSetNX), Faults: Crash | Idle, Clocks: true},
	Target{Name: "getset", New: rung(lock.NewGetSet), Faults: Skew | Idle, Clocks: true},
	Target{Name: "reentrant", New: rung(lock.NewReentrant), Faults: Pause | Idle},
	// Redlock's plain algorithm: every attempt its own (WaitFixed), not
	// a process's line, which only orders requests of one process.
	Target{Name: "fenced", New: rung(lock.NewFenced), Faults: Crash | Pause | Slow},
	Target{Name: "fair", New: rung(func(rdb redis.Cmdable, o lock.Options) lock.Locker { return lock.NewFair(rdb, o) }), Faults: Crash | Pause | Slow},
	// Cohort with A and B one process: B waits in A's line and is passed
	// the lock in memory, or takes it through Redis; C, a process of its
	// own, waits in fair's queue. Its lesson, not its speed layer: each
	// section sends its own commands (the app's pipe and carry are not
	// run), and one section a client never reaches the bound. Made as the
	// ladder makes it (speed.NewCohort): its release goes down the line's
	// pipe, one EVAL.
	Target{Name: "cohort", New: rungCall(func(rdb redis.Cmdable, o lock.Options) lock.Locker { return speed.NewCohort(rdb, o, 0) }, waitInLineCall), Faults: Crash | Pause | Slow, Line: true,
		Unexplored: "its speed layer (the line's pipe, values carried from one section to the next) and a cohort at its bound (16 sections)"},
	atomicTarget,
)

// OnMasters are the rungs on independent masters: Redlock, on five (on
// the page, PageMasters). Two clients: its flaws need no more, and a
// third multiplies the interleavings of five masters past the budget.
var OnMasters = labTargets(
	Target{Name: "redlock", Masters: 5, NewMasters: rungMasters(newRedlock, lock.Call{Try: new(time.Duration), Wait: lock.WaitFixed}), Watch: watchRounds, Faults: Pause, MaxClients: 2},
	// redsync's Mutex over the masters, the library's code unchanged
	// (libraries.go): every call asks each master and waits for every
	// answer.
	Target{Name: "redsync-redlock", Masters: 5, NewMasters: rungMasters(newRedsyncRedlock, lock.Call{Try: new(time.Duration)}), WaitsAll: true, Faults: Pause, MaxClients: 2,
		Tokens: true, ReplayTTL: redsyncReplayTTL},
)

// PageMasters is how many masters Redlock has on the page: three, a
// quorum of two, the same algorithm as on five, searched within the
// page's 20 s (five take about as long again; make explore runs five).
const PageMasters = 3

// Page are the rungs the page's "why?" offers: Targets, then OnMasters
// on PageMasters masters.
func Page() []Target {
	out := append([]Target(nil), Targets...)
	for _, t := range OnMasters {
		t.Masters = min(t.Masters, PageMasters)
		out = append(out, t)
	}
	return out
}

// Lookup returns the target called name among Page.
func Lookup(name string) (Target, error) { return lookupIn(Page(), name) }

// LookupAny returns the target called name among Targets, OnMasters
// and Libraries.
func LookupAny(name string) (Target, error) {
	return lookupIn(append(append(append([]Target(nil), Targets...), OnMasters...), Libraries...), name)
}

func lookupIn(targets []Target, name string) (Target, error) {
	var names []string
	for _, t := range targets {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Target{}, fmt.Errorf("explore: no rung %q to explore (valid: %s)", name, strings.Join(names, ", "))
}
