package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockladder/lockladder/internal/line"
)

// Backoff says how long to sleep before the next attempt. One Backoff serves
// one Obtain call, so it may keep state.
type Backoff interface {
	NextBackoff() time.Duration
}

type fixed time.Duration

func (f fixed) NextBackoff() time.Duration { return time.Duration(f) }

// FixedSleep retries after the same pause every time, as the articles do
// (100ms, 60ms, 1s, 1ms). Under contention it polls blindly: short sleeps
// waste Redis round trips, long ones leave the lock idle.
func FixedSleep(d time.Duration) func() Backoff {
	return func() Backoff { return fixed(d) }
}

// Jitter is how ExponentialBackoff randomises each pause.
type Jitter int

const (
	// FullJitter draws each pause at random in [0, d): waiters that failed
	// together spread over the whole window.
	FullJitter Jitter = iota
	// EqualJitter draws each pause in [d/2, d): never much shorter than
	// the exponential step, still spread.
	EqualJitter
)

type exponential struct {
	next, limit time.Duration
	jitter      Jitter
}

func (e *exponential) NextBackoff() time.Duration {
	d := e.next
	e.next = min(2*e.next, e.limit)
	var half time.Duration
	if e.jitter == EqualJitter {
		half = d / 2
	}
	return half + rand.N(d-half)
}

// ExponentialBackoff doubles the pause after every failed attempt, from
// base up to limit, each pause randomised by j. Waiters that keep losing
// poll less and less often, and spread out instead of retrying in step.
// It does not know when the lock frees either: a waiter sleeping near the
// limit leaves a freed lock idle, and who wins is still luck.
func ExponentialBackoff(base, limit time.Duration, j Jitter) func() Backoff {
	base = max(base, time.Microsecond)
	limit = max(limit, base)
	return func() Backoff { return &exponential{next: base, limit: limit, jitter: j} }
}

// WaitMode is how a Redis rung waits for a busy lock between two tries.
type WaitMode string

const (
	// WaitFixed sleeps Options.Retry between tries: the articles' loop.
	WaitFixed WaitMode = "fixed"
	// WaitBackoff sleeps Options.Backoff: exponential with jitter, capped.
	WaitBackoff WaitMode = "backoff"
	// WaitNotify sleeps until Redis announces that the lock's key was
	// deleted or expired (Options.Notifier), trying again at once; a slow
	// fallback tick covers what goes unannounced (a lost message, a server
	// that does not announce). Without a Notifier it waits as WaitBackoff.
	WaitNotify WaitMode = "notify"
	// WaitQueue lines up the process's requests for one key in memory,
	// first come first served; only the head of the line asks the back end
	// for the lock, woken when the lock's deletion is announced (or
	// polling briefly without announcements). With 100 requests over 3
	// processes, 3 contend instead of 100, and a freed lock is taken at
	// once instead of at someone's next blind retry. It is the default of
	// the locks that poll (the articles' loop, WaitFixed, spends most of
	// its Redis round trips on tries that fail, and whoever retries first
	// wins), of db-optimistic (100 writers on one row mostly lose their
	// version check), and redlock's default, WaitRelay, builds on it (100
	// contenders split the masters' votes so that most attempts win no
	// majority).
	WaitQueue WaitMode = "queue"
	// WaitCohort is WaitQueue, and a head whose section ends with another
	// request in its line passes its lock on in memory instead of
	// releasing it, while more than half its validity is left: redlock's
	// quorum paid once for many sections (rung 13's idea, lock
	// cohorting). Only redlock offers it.
	WaitCohort WaitMode = "cohort"
	// WaitRelay is WaitQueue, and a head whose section ends with another
	// request in its line relays the lock to it through the masters: one
	// compare-and-swap of the token on each (the old holder's token for
	// the next one's, with a fresh lease) instead of a release on five and
	// an acquisition on five. Each section still holds its own
	// majority-granted lease, counted from its own swap; a chain ends
	// after 64 sections or half a lease, and the lock goes back to every
	// process's head. Only redlock offers it, as its default.
	WaitRelay WaitMode = "relay"
)

// WaitModes lists every WaitMode.
var WaitModes = []WaitMode{WaitFixed, WaitBackoff, WaitNotify, WaitQueue, WaitCohort, WaitRelay}

// ParseWaitMode returns the WaitMode called s.
func ParseWaitMode(s string) (WaitMode, error) {
	for _, m := range WaitModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("lock: unknown wait mode %q (valid: %v)", s, WaitModes)
}

// Waiter is how a caller spends the time between two tries of a lock:
// acquire's, and the loop of a wrapper that tries a Rung itself (package
// speed's Line, whose head waits by HeadWaiter).
type Waiter interface {
	// Wait returns when it is time to try again, or with handed true when
	// the lock has already been handed to this caller (fair's handoff),
	// or with an error when ctx ends.
	Wait(ctx context.Context) (handed bool, err error)
	// Done is called once, when the caller stops trying; obtained says
	// whether it now holds the lock.
	Done(obtained bool)
}

// mode is how a call waits: by the Call's WaitMode, else by the
// Options', else "" (the rung's own default).
func (o Options) mode(c Call) WaitMode {
	if c.Wait != "" {
		return c.Wait
	}
	return o.WaitMode
}

// waiter returns how an Obtain of key polls: by mode(c), WaitFixed by
// default.
func (o Options) waiter(c Call, key string) Waiter {
	return o.waiterFor(o.mode(c), key)
}

// waiterFor returns how an Obtain of key polls waiting by m: WaitBackoff,
// WaitNotify (as WaitBackoff without a Notifier), WaitQueue (the head of
// a line: every 2ms, jittered, or woken by the Notifier), else WaitFixed.
func (o Options) waiterFor(m WaitMode, key string) Waiter {
	switch m {
	case WaitBackoff:
		return o.sleeper(o.Backoff())
	case WaitNotify:
		if o.Notifier != nil {
			return o.Notifier.Watch(key, o.After)
		}
		return o.sleeper(o.Backoff())
	case WaitQueue:
		return o.HeadWaiter(key)
	default:
		return o.sleeper(o.Retry())
	}
}

// sleeper waits by a Backoff: it polls.
type sleeper struct {
	b     Backoff
	timer WaitTimer
}

func (s *sleeper) Wait(ctx context.Context) (bool, error) {
	return false, s.timer.Sleep(ctx, s.b.NextBackoff())
}

func (s *sleeper) Done(bool) { s.timer.Stop() }

// sleeper returns a waiter that sleeps by b on o's timer.
func (o Options) sleeper(b Backoff) *sleeper {
	return &sleeper{b: b, timer: WaitTimer{At: o.After}}
}

// WaitTimer is a waiter's one timer, made on its first wait and reused
// for every wait after it: the waiters (sleeper, handoffWait, package
// notify's) wait between every two tries. With At set (Options.After) it
// waits on At's channels instead.
type WaitTimer struct {
	t  *time.Timer
	At func(d time.Duration) <-chan time.Time
}

// After arms the timer to fire once d has passed, and returns its channel.
func (w *WaitTimer) After(d time.Duration) <-chan time.Time {
	if w.At != nil {
		return w.At(d)
	}
	if w.t == nil {
		w.t = time.NewTimer(d)
	} else {
		w.t.Reset(d)
	}
	return w.t.C
}

// Sleep waits d, or until ctx ends.
func (w *WaitTimer) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.After(d):
		return nil
	}
}

// Stop stops the timer, if there is one: the waiter is done.
func (w *WaitTimer) Stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// Jittered draws a pause in [d/2, 3d/2), so that waiters that failed
// together do not try again together.
func Jittered(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d/2 + rand.N(d)
}

// Notifier hears what Redis announces, so that a waiter sleeps until the
// lock may be its own instead of polling: a lock key's deletion, and
// fair's handoffs. Package lock/speed/notify's Notifier is one
// subscription per process.
type Notifier interface {
	// Watch registers a waiter of key before its first try: it wakes
	// when key is deleted or expires, or on a slow fallback tick. after
	// is Options.After.
	Watch(key string, after func(time.Duration) <-chan time.Time) Waiter
	// Handoff registers fair's waiter token: handed delivers the
	// fencing token of the handoff that names it; forget unregisters it.
	Handoff(token string) (handed <-chan int64, forget func())
	// Channel is where fair's release announces its handoffs.
	Channel() string
}

// Poll makes r a Locker that tries until it holds the lock, waiting
// between two tries as the Call (else o) says: the articles' fixed sleep
// (the default), an exponential backoff, until the lock's deletion is
// announced, or as the head of its process's line (WaitQueue: package
// speed's Line keeps the line). It is how rungs 2 to 9 and 11 wait.
// Redlock (rung 10) waits its own way, in a line of its own between its
// rounds on the masters; fair and the cohorts (12, 13) wait in fair's
// queue for a handoff; the other back ends' rungs (14 to 16) wait as
// their servers queue them. The Locker it returns is Polled.
func Poll(r Rung, o Options) Locker {
	return &polling{r: r, opts: o.WithDefaults()}
}

type polling struct {
	counts
	r    Rung
	opts Options
}

var _ Polled = (*polling)(nil)

func (p *polling) Rung() Rung { return p.r }

func (p *polling) Options() Options { return p.opts }

// Polled is a Locker Poll made: Rung is the Rung it tries, for a wrapper
// that waits its own way and tries the rung itself (package speed's Line);
// Options are the options the rung's constructor gave Poll, which may
// differ from its caller's (a PostgreSQL rung has no Notifier: nothing
// announces its release).
type Polled interface {
	Locker
	Rung() Rung
	Options() Options
}

func (p *polling) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	var held Lock
	err := acquire(ctx, p.opts, c, p.opts.waiter(c, key), func(ctx context.Context) (bool, error) {
		l, ok, err := p.r.Try(ctx, key, c)
		held = l
		if !ok && err == nil {
			p.retries.Add(1)
		}
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

// acquire calls try until it reports success, the waiter says the lock was
// handed over, the call's bound passes, or ctx ends; between two tries it
// waits by w. It is the one wait loop of every Redis rung. A call that
// tries once (Call.Try 0) gets ErrBusy when its one try fails.
func acquire(ctx context.Context, o Options, c Call, w Waiter, try func(context.Context) (bool, error)) (failed error) {
	defer func() { w.Done(failed == nil) }()
	bound := o.bound(c)
	if bound == 0 {
		ok, err := try(ctx)
		switch {
		case err != nil:
			return err
		case !ok:
			return ErrBusy
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()

	for {
		ok, err := try(ctx)
		switch {
		case ok:
			return nil
		case err != nil && !errors.Is(err, ctx.Err()):
			// The back end failed (Redis unreachable, say): report that,
			// not a lock that merely seemed busy.
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
		}
		handed, err := w.Wait(ctx)
		if err != nil {
			return fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, err)
		}
		if handed {
			return nil
		}
	}
}

// bound is how long a call may wait: its Try, else the Options' Wait.
func (o Options) bound(c Call) time.Duration { return c.Bound(o.Wait) }

// WaitTurn joins key's line and returns once the request is at its head, for
// a call whose ctx already carries its wait bound: with bound 0 (one
// attempt) the line must be empty, or it is ErrBusy; a line not reached
// in time is ErrNotObtained.
func WaitTurn(ctx context.Context, q *line.Queue, key string, bound time.Duration) (*line.Turn, error) {
	if bound == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	t, err := q.Enter(ctx, key)
	switch {
	case err == nil:
		return t, nil
	case bound == 0:
		return nil, ErrBusy
	}
	return nil, fmt.Errorf("%w: waited %s in this process's line for %s: %w", ErrNotObtained, bound, key, err)
}

// headWaiter is how the head of a line waits between two tries: woken by
// n when the lock's deletion is announced, or without n polling every
// pause, jittered in [pause/2, 3*pause/2).
func (o Options) headWaiter(n Notifier, key string, pause time.Duration) Waiter {
	if n != nil {
		return n.Watch(key, o.After)
	}
	return o.sleeper(spread{fixed(pause)})
}

// HeadWaiter is how the head of a process's line for key waits between
// two tries (WaitQueue): woken when o.Notifier hears the lock's deletion,
// or without a Notifier polling every 2ms, jittered. Register it before
// the first try, so that no deletion after that try goes unheard.
func (o Options) HeadWaiter(key string) Waiter {
	return o.headWaiter(o.Notifier, key, queuePause)
}

// queuePause is how often the head of a line polls when nothing announces
// the lock's release: one waiter per process, so a short pause wastes
// little and leaves a freed lock idle for little.
const queuePause = 2 * time.Millisecond
