package explore

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
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

// ErrNotObtained is what a Locker's Obtain returns (or wraps) when
// another client holds the lock: the client tries again when the search
// says. It is the lab's lock.ErrNotObtained.
var ErrNotObtained = lock.ErrNotObtained

// Locker is a lock under check, as one client holds it. The search makes
// one for each client of each schedule (Lock.New), so it may keep state.
type Locker interface {
	// Obtain makes one attempt to take key. It returns the held lock, or
	// an error wrapping ErrNotObtained when another client holds key; it
	// does not wait and retry (the search decides when the client tries
	// again). Any other error fails the check: in the search, Redis
	// answers every command it is sent.
	Obtain(ctx context.Context, key string) (Held, error)
}

// Held is a lock a client holds. Release gives it up; its error (the
// lease had lapsed, say) is the lock's business, not a verdict.
//
// A Held that also has a method Token() int64 returning a positive
// fencing token (larger at every acquisition) is fenced: the client's
// write then goes through a script that refuses a token smaller than the
// largest it has seen, as storage that checks fencing tokens does.
type Held interface {
	Release(ctx context.Context) error
}

// Ticker paces a renewal loop (a watchdog) on the search's clock: Wait
// returns true at the next tick, false once ctx ends; Stop ends it. A
// paused client's tickers are frozen with it.
type Ticker interface {
	Wait(ctx context.Context) bool
	Stop()
}

// Env is what a client's lock gets from the search besides its Redis
// connection. The search's time is virtual: Redis's clock (TTLs, PX, Lua's
// TIME) is moved by the search, not by the wall clock, so a lock that
// reads the time or renews its lease must do it through Env for the
// search to drive it (time.Now and time.Ticker run on, unseen).
type Env struct {
	// TTL is the lease to take (Config.TTL, default 2s).
	TTL time.Duration
	// Now is the client's clock: the search's virtual time, run ahead
	// for a client whose clock is skewed.
	Now func() time.Time
	// NewTicker makes a ticker on the search's time, for a renewal loop
	// started in Obtain (or in the section): it ticks when the search
	// lets time pass, and not while its client is paused.
	NewTicker func(every time.Duration) Ticker
	// After is the timer for a wait between two tries: the waiter that
	// sleeps on its channel tries again when the search delivers it.
	After func(d time.Duration) <-chan time.Time
}

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
	name := l.Name
	if name == "" {
		name = "lock"
	}
	return Target{
		Name: name,
		New: func(rdb redis.Cmdable, o lock.Options) lock.Locker {
			u, _ := rdb.(redis.UniversalClient) // the explorer's clients are *redis.Client
			env := Env{TTL: o.TTL, Now: o.Clock, NewTicker: func(every time.Duration) Ticker { return o.Ticker(every) }, After: o.After}
			return userLocker{name: name, l: l.New(u, env)}
		},
		Faults: CheckFaults,
		Clocks: true,
		tokens: true,
		strict: true,
	}
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
	return ex.searchLock(ctx)
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
	wall := startWallClock(l.Target().Name)
	defer wall.close()
	synctest.Test(t, func(bt *testing.T) {
		ex := newBubble(l.Target(), cfg)
		ex.wall, ex.steps = wall.read, &wall.steps
		r, err = ex.searchLock(bt.Context())
	})
	return r, err
}

func (ex *Explorer) searchLock(ctx context.Context) (r Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("explore: %s: %v (does its Obtain make one attempt and return, and wait on nothing but Redis and Env?)", ex.target.Name, p)
			return // the world's goroutines may be stuck: the Redis is left to them
		}
		ex.Close()
	}()
	r = ex.Run(ctx)
	if e := ex.failure(); e != nil {
		return r, e
	}
	if r.Diverged > 0 {
		return r, fmt.Errorf("explore: %s: %d schedules went another way when run again: the lock does something the search does not drive (a timer, a goroutine of its own, randomness that changes what it sends)", ex.target.Name, r.Diverged)
	}
	return r, nil
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

// Diagram is the counterexample's sequence diagram, as Write draws it
// ("" for a Result with none).
func (r Result) Diagram() string {
	if r.Verdict == None {
		return ""
	}
	var b strings.Builder
	writeDiagram(&b, r.Trace, r.Clients)
	return b.String()
}

// userLocker runs a Locker of Check's as a lab rung: one attempt per
// Obtain, busy as lock.ErrNotObtained.
type userLocker struct {
	name string
	l    Locker
}

func (u userLocker) Obtain(ctx context.Context, key string, _ lock.Call) (lock.Lock, error) {
	h, err := u.l.Obtain(ctx, key)
	switch {
	case err != nil && errors.Is(err, lock.ErrNotObtained):
		return nil, err
	case err != nil:
		return nil, &lockError{fmt.Errorf("%s: Obtain: %w", u.name, err)}
	case h == nil:
		return nil, &lockError{fmt.Errorf("%s: Obtain returned neither a lock nor an error", u.name)}
	}
	return h, nil
}

// lockError is a Locker's failure other than busy: it fails the check.
type lockError struct{ err error }

func (e *lockError) Error() string { return e.err.Error() }
func (e *lockError) Unwrap() error { return e.err }

// failures keeps the first failure of a checked lock's code (Target's
// strict): an error other than busy, or a panic, while the world ran.
type failures struct {
	mu  sync.Mutex
	err error
}

func (ex *Explorer) fail(err error) {
	ex.failed.mu.Lock()
	defer ex.failed.mu.Unlock()
	if ex.failed.err == nil {
		ex.failed.err = err
	}
}

func (ex *Explorer) failure() error {
	ex.failed.mu.Lock()
	defer ex.failed.mu.Unlock()
	return ex.failed.err
}

// caught records a panic of a checked lock's code in c's program (its
// program then ends, as a crash would).
func (c *client) caught() {
	if p := recover(); p != nil {
		c.w.ex.fail(fmt.Errorf("explore: %s: client %s panicked: %v\n%s", c.w.ex.target.Name, c.name, p, debug.Stack()))
	}
}

// obtainFailed records the error of an Obtain that neither held nor
// found the lock busy, while the world still ran.
func (c *client) obtainFailed(err error) {
	var le *lockError
	if c.w.ex.target.strict && !c.w.closed.Load() && errors.As(err, &le) {
		c.w.ex.fail(fmt.Errorf("explore: client %s: %w", c.name, le.err))
	}
}
