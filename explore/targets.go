package explore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
)

// Targets are the Redis rungs on one server, in ladder order, each with
// the faults of the scenario the ladder names for its flaw
// (docs/ladder.md), and made by the constructor ladder.New calls.
var Targets = []Target{
	{Name: "setnx", New: lock.NewSetNX, Faults: Crash | Idle},
	{Name: "setnx-expire", New: lock.NewSetNXExpire, Faults: Crash | Idle},
	{Name: "setnx-px", New: lock.NewSetNXPX, Faults: Late},
	{Name: "check-del", New: lock.NewCheckDel, Faults: Late},
	{Name: "lua", New: lock.NewLua, Faults: Slow},
	{Name: "del-setnx", New: lock.NewDelSetNX, Faults: Crash | Idle, Clocks: true},
	{Name: "getset", New: lock.NewGetSet, Faults: Skew | Idle, Clocks: true},
	{Name: "reentrant", New: lock.NewReentrant, Faults: Pause | Idle},
	// Redlock's plain algorithm: every attempt its own (WaitFixed), not
	// a process's line, which only orders requests of one process.
	{Name: "fenced", New: lock.NewFenced, Faults: Crash | Pause | Slow},
	{Name: "fair", New: func(rdb redis.Cmdable, o lock.Options) lock.Locker { return lock.NewFair(rdb, o) }, Faults: Crash | Pause | Slow},
	// Cohort with A and B one process: B waits in A's line and is passed
	// the lock in memory, or takes it through Redis; C, a process of its
	// own, waits in fair's queue. Its lesson, not its speed layer: each
	// section sends its own commands (the app's pipe and carry are not
	// run), and one section a client never reaches the bound. Made as the
	// ladder makes it (speed.NewCohort): its release goes down the line's
	// pipe, one EVAL.
	{Name: "cohort", New: func(rdb redis.Cmdable, o lock.Options) lock.Locker { return speed.NewCohort(rdb, o, 0) }, Faults: Crash | Pause | Slow, Line: true,
		Unexplored: "its speed layer (the line's pipe, values carried from one section to the next) and a cohort at its bound (16 sections)"},
	atomicTarget,
}

// OnMasters are the rungs on independent masters: Redlock, on five (on
// the page, PageMasters). Two clients: its flaws need no more, and a
// third multiplies the interleavings of five masters past the budget.
var OnMasters = []Target{
	{Name: "redlock", Masters: 5, NewMasters: newRedlock, Wait: lock.WaitFixed, Faults: Pause, MaxClients: 2},
	// redsync's Mutex over the masters, the library's code unchanged
	// (libraries.go): every call asks each master and waits for every
	// answer.
	{Name: "redsync-redlock", Masters: 5, NewMasters: newRedsyncRedlock, WaitsAll: true, Faults: Pause, MaxClients: 2,
		tokens: true, replayTTL: redsyncReplayTTL},
}

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

// Target is a rung as the explorer runs it.
type Target struct {
	Name string
	// New makes the rung's Locker, with the constructor the app's ladder
	// uses (ladder.New).
	New func(redis.Cmdable, lock.Options) lock.Locker
	// Masters, for a rung on independent masters (Redlock), is how many,
	// and NewMasters makes it over them; New is then nil.
	Masters    int
	NewMasters func([]redis.Cmdable, lock.Options) lock.Locker
	// WaitsAll: a library on masters whose every call asks each master
	// and waits for every answer (redsync), its rounds known from the
	// commands at the gates, not reported (rounds.go).
	WaitsAll bool
	// Wait is the wait mode of each Obtain ("" the rung's default).
	Wait lock.WaitMode
	// MaxClients, when positive, caps Config.MaxClients.
	MaxClients int
	// Faults are the scenario the ladder names for the rung's flaw.
	Faults Faults
	// Clocks: the rung reads clocks (Options.Clock), so skew applies.
	Clocks bool
	// Line: B is a request of A's process, waiting in its line (line.go).
	Line bool
	// Unexplored says what of the rung the search does not run ("":
	// nothing); what it covered says so.
	Unexplored string
	// Business is the critical section, sending its commands down rdb
	// (or through s, the app's store over rdb); nil is the app's sale
	// (Sale).
	Business func(ctx context.Context, rdb redis.Cmdable, s *inventory.Store, l lock.Lock) error
	// tokens: the lock's tokens are not UUIDs (a library's random
	// strings): learn them from the commands (tokens.go).
	tokens bool
	// wallDeadlines: the library gives each call to Redis a wall-clock
	// deadline of its own (redsync: 5% of the expiry); the gate holds it
	// off, as for WaitsAll (gate.go).
	wallDeadlines bool
	// strict: a lock under Check; an Obtain that fails other than busy,
	// or panics, fails the check.
	strict bool
	// replayTTL, when positive, is the lease of a replay unless the
	// Replayer sets one: a library whose wall-clock deadlines are a share
	// of the lease needs a longer one than the replay's 300 ms.
	replayTTL time.Duration
}

func (t Target) business() func(context.Context, redis.Cmdable, *inventory.Store, lock.Lock) error {
	if t.Business != nil {
		return t.Business
	}
	return Sale
}
