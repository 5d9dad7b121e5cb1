package explore

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/redis/go-redis/v9"
)

// Checking your own lock: Check (in a test) and Search run a lock of
// yours, any lock that talks to Redis through go-redis, as the explorer
// runs the lab's rungs: two and then three clients, each taking the lock
// and selling one item under it (GET, SET, INCR, on the same Redis), every
// command held at a gate until the search delivers it, with crashes,
// pauses, clock skew and time passing as choices. A schedule in which two
// clients write inside their sections at once is OVERSOLD; one in which
// the live clients can never take a lock a dead one left is DEADLOCK.
// The shortest such schedule fails the test, drawn as a sequence diagram;
// or the test passes, and its log says what the search covered.

// Lock is a lock to check: its name in the report and how to make one
// client's Locker.
type Lock struct {
	// Name names the lock in the report. Default "lock".
	Name string
	// New makes one client's Locker over rdb, that client's connection
	// to the search's Redis: every command it sends waits at a gate until
	// the search delivers it. The key the client locks is given to
	// Obtain; the lock may use other keys of its own.
	New func(rdb redis.UniversalClient, env Env) Locker
}

// CheckFaults are the faults and passings of time Check searches unless
// Config.Faults says otherwise: a client crashes, a holder pauses for a
// lease and a millisecond, a clock runs ahead by a lease and a half, and
// time passes at any step (a section may outlive its lease).
const CheckFaults = Crash | Pause | Skew | Slow

// Target is the lock as the explorer runs it: for a Replayer, or for
// RunAll's callers.
func (l Lock) Target() Target {
	return Target{Name: cmp.Or(l.Name, "lock"), New: l.New, Faults: CheckFaults, Clocks: true, Tokens: true, Strict: true, Business: guessedFence}
}

// Search explores l's schedules within cfg's bounds (faults CheckFaults
// unless cfg.Faults is set) and returns what it found: a Result whose
// Verdict is Oversold or Deadlock with the shortest schedule (Write and
// Diagram draw it), or None with what it covered (Covered). An error
// says the check could not run: the lock's Obtain failed other than
// busy, panicked, or did not come back to Redis (it waits on something
// the search does not drive).
func Search(ctx context.Context, l Lock, cfg Config) (r Result, err error) {
	if l.New == nil {
		return Result{}, errors.New("explore: Lock.New is nil")
	}
	ex, err := New(l.Target(), cfg)
	if err != nil {
		return Result{}, err
	}
	return ex.Search(ctx)
}

// Explore searches l's schedules as Search does, inside a bubble of
// testing/synctest (bubble.go): time is the search's whatever the lock
// calls (time.Now, time.Sleep, timers, tickers, context deadlines), so a
// lock that waits and retries on its own, or reads the wall clock, is
// searched like any other. It does not fail t: Check does.
func Explore(t *testing.T, l Lock, cfg Config) (r Result, err error) {
	t.Helper()
	if l.New == nil {
		return Result{}, errors.New("explore: Lock.New is nil")
	}
	wall := StartWallClock(l.Target().Name)
	defer wall.Close()
	synctest.Test(t, func(bt *testing.T) {
		r, err = NewInBubble(l.Target(), cfg, wall).Search(bt.Context())
	})
	return r, err
}

// Check searches l's schedules (Search) and fails t with the shortest
// schedule that breaks l, drawn as a sequence diagram, or logs what the
// search covered. It returns the Result for further assertions. A lock
// found safe is searched until the states run out or the budget does
// (Config's defaults: 2 then 3 clients, depth 18, 60 s): a test bounds
// it with MaxClients, Depth or Budget, and the log says which bound
// stopped it. One
// search runs at a time in a process (the virtual time its lockers'
// tickers and timers follow is one per process): Checks in parallel
// tests take turns.
//
//	func TestMyLock(t *testing.T) {
//		explore.Check(t, explore.Lock{Name: "mylock", New: newMyLock}, explore.Config{})
//	}
func Check(t *testing.T, l Lock, cfg Config) Result {
	t.Helper()
	return check(t, t, l, cfg)
}

// reporter is what Check says its verdict to: the test (or, in the
// package's tests, a recorder of what it would say).
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

func check(t *testing.T, rep reporter, l Lock, cfg Config) Result {
	t.Helper()
	r, err := Explore(t, l, cfg)
	rep.Helper()
	if err != nil {
		rep.Errorf("%v", err)
		return r
	}
	var b strings.Builder
	r.Write(&b)
	if r.Verdict != None {
		rep.Errorf("explore: %s", b.String())
	} else {
		rep.Logf("explore: %s", b.String())
	}
	return r
}

// guessedFence is the sale, fenced when the held lock has a Token method.
var guessedFence = func() *Business {
	b := saleBusiness
	fenced := FencedSale(func(h Held) (int64, error) { return h.(interface{ Token() int64 }).Token(), nil })
	b.Run = func(ctx context.Context, rdb redis.UniversalClient, h Held) error {
		if _, ok := h.(interface{ Token() int64 }); ok {
			return fenced.Run(ctx, rdb, h)
		}
		return saleBusiness.Run(ctx, rdb, h)
	}
	return &b
}()
