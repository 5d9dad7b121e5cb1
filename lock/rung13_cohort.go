package lock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cohort is fair's lock (rung 12) with one more level of waiting, the way
// cohort locks do on NUMA machines (Dice, Marathe and Shavit, "Lock
// Cohorting", 2012). Fair hands the lock from one request to the next
// through Redis: every critical section pays an acquisition (or a
// handoff), the waiter's wake-up and a release, and the next section
// cannot start before those round trips are done.
//
// Here a process's requests for one key line up in memory, first come
// first served (cohortLine), and only the head of the line takes the
// lock in Redis (fair's queue orders the heads of the instances). When
// its section ends and another request of the same process waits, it
// passes the lock in memory, without a round trip: the next section
// starts at once, under the same lease, which fair's watchdog keeps
// renewing. Only after Bound sections, or once the lock has been held
// for half a lease, or when nobody here waits, does the process release
// it in Redis, where fair hands it to the oldest waiting instance: no
// instance waits longer than one cohort of another. The bound is for
// them: a cohort that no other instance waits for goes on past it (the
// paper's "alone?" check: past the bound, a pass needs an answer from
// Redis, asked after the pass before it, that nobody waits in fair's
// queue). Giving the lock back to nobody would cost two round trips for
// nothing: the release, and taking it again.
//
// Safety is fair's: every section runs under the cohort's valid lease
// (a lease found lost is never passed on: the process releases instead),
// and each has its own fencing token, the global token times 2^20 plus
// the section's number within the cohort, so tokens grow strictly from
// one section to the next, across processes too. A paused process is
// cut off as with fair: its watchdog stops, its lease lapses, the next
// instance's token is higher, and the paused sections' late writes are
// refused.
//
// What it costs: fairness between instances (a cohort runs up to Bound
// sections while the other instances wait), and a line in every process.
//
// Its speed is a layer around this (package speed's NewCohort and
// NewCohortCarry): each line gets a CohortLine, which its sections send
// their commands down and which gives the lock back to Redis; the cohort
// asks it, in the same locked step as it looks at the line's waiters,
// whether a section may pass the lock on (never after a command of the
// cohort failed; past the bound, only on an answer that nobody waits in
// Redis). Without it (NewCohort), each command goes out on its own, the
// release is fair's, and a cohort ends at its bound.
type Cohort struct {
	passes atomic.Uint64 // sections passed in memory
	fair   *Fair
	bound  int
	share  time.Duration // how long a cohort may keep the lock: half a lease

	mu    sync.Mutex
	lines map[string]*cohortLine
	speed func(key string) CohortLine // a new line's speed
}

var _ Locker = (*Cohort)(nil)

// Counts are fair's between the instances, and the sections passed in
// memory as handoffs too.
func (c *Cohort) Counts() Counts {
	n := c.fair.Counts()
	n.Handoffs += c.passes.Load()
	return n
}

// DefaultCohortBound is how many sections one global acquisition may run
// by default while another instance waits. The bound trades the other
// instances' wait against the handoffs through Redis: a longer cohort
// makes the others wait longer, a shorter one pays a handoff through
// Redis more often (MEASUREMENTS.md, "cohort's bound": measured
// against 64 and 8).
const DefaultCohortBound = 16

// cohortSeqBits is the room a cohort's section numbers take in a token;
// a cohort ends at cohortSeqMax sections, alone or not.
const (
	cohortSeqBits = 20
	cohortSeqMax  = 1<<cohortSeqBits - 1
)

// NewCohort returns the cohort lock over fair's lock on rdb: bound
// sections at most per global acquisition (0: DefaultCohortBound).
// Options are fair's.
func NewCohort(rdb redis.Cmdable, o Options, bound int) *Cohort {
	return NewCohortWith(rdb, o, bound, func(string) CohortLine { return plainLine{} })
}

// NewCohortWith is NewCohort whose lines keep the speed that speed makes
// for each (package speed's pipe), from the line's key.
func NewCohortWith(rdb redis.Cmdable, o Options, bound int, speed func(key string) CohortLine) *Cohort {
	if bound <= 0 {
		bound = DefaultCohortBound
	}
	bound = min(bound, cohortSeqMax)
	f := NewFair(rdb, o)
	return &Cohort{fair: f, bound: bound, share: f.opts.TTL / 2, lines: map[string]*cohortLine{}, speed: speed}
}

// CohortLine is what one line of a Cohort keeps for its speed. The
// Cohort calls Restart, AtBound and MayPass while it holds its mutex, in
// the step that also reads and changes the line: they must not block, nor
// call back into the Cohort.
type CohortLine interface {
	// Restart: the line holds the lock in Redis again, a new cohort (not
	// at its bound).
	Restart()
	// AtBound: whether the section running now is at or past the bound
	// (false once the lock is on its way back to Redis).
	AtBound(at bool)
	// MayPass says whether a section may pass the lock on to the line's
	// next waiter: within the bound (within) unless a command of the
	// cohort failed; past it only on an answer, asked after the last
	// pass past it, that nobody waits in Redis (which it uses up).
	MayPass(within bool) bool
	// Send is a section's Piped.Send.
	Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) (wait func() error)
	// GiveBack releases held, fair's lock, behind the line's commands,
	// and waits for its answer. It is called without the mutex.
	GiveBack(ctx context.Context, held Lock) error
}

// plainLine is a line with no speed: a command goes out at once, the
// release is fair's, and a cohort ends at its bound (nobody asks Redis
// whether another instance waits).
type plainLine struct{}

func (plainLine) Restart()                                      {}
func (plainLine) AtBound(bool)                                  {}
func (plainLine) MayPass(within bool) bool                      { return within }
func (plainLine) GiveBack(ctx context.Context, held Lock) error { return held.Release(ctx) }

func (plainLine) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, _ bool) func() error {
	var check func() error
	// The command's error is read by its check.
	_, _ = rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		check = q(p)
		return nil
	})
	err := check()
	return func() error { return err }
}

// cohortLine is one key's line in this process, from the request that
// finds no line to the moment the last one hands on to nobody (handOn):
// then the line is forgotten, and the next request starts a new one.
type cohortLine struct {
	key     string
	busy    bool         // a request of ours holds the lock, or is taking it
	waiters []chan baton // oldest first; each gets one baton
	held    *fairLock    // the lock in Redis while the cohort has it
	seq     int64        // sections run under held
	since   time.Time    // when held was obtained, on the lock's clock (Options.Clock)
	lease   bool         // held has an explicit lease: no renewal, so no passing
	speed   CohortLine   // its pipe to Redis (package speed), or plainLine
}

// baton is what a waiter gets: the lock itself (pass), or its turn to
// take the lock in Redis.
type baton struct{ pass bool }

// Obtain waits for this process's line, then, unless the lock was passed
// to it, takes the lock in Redis within what is left of the wait bound.
// The Lock it returns is Tokened.
func (c *Cohort) Obtain(ctx context.Context, key string, call Call) (Lock, error) {
	bound := c.fair.opts.bound(call)
	c.mu.Lock()
	ln := c.lines[key]
	if ln == nil {
		ln = &cohortLine{key: key, speed: c.speed(key)}
		c.lines[key] = ln
	}
	if !ln.busy {
		ln.busy = true
		c.mu.Unlock()
		return c.takeGlobal(ctx, key, ln, call)
	}
	if bound == 0 { // one attempt: our own process holds it
		c.mu.Unlock()
		return nil, ErrBusy
	}
	ch := make(chan baton, 1)
	ln.waiters = append(ln.waiters, ch)
	c.mu.Unlock()

	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var b baton
	select {
	case b = <-ch:
	case <-wctx.Done():
		c.mu.Lock()
		if i := slices.Index(ln.waiters, ch); i >= 0 {
			ln.waiters = slices.Delete(ln.waiters, i, i+1)
			c.mu.Unlock()
			return nil, fmt.Errorf("%w: waited %s in this process's line for %s: %w", ErrNotObtained, bound, key, wctx.Err())
		}
		c.mu.Unlock()
		// Handed a baton as we gave up: pass it on as if we had run.
		b = <-ch
		if b.pass {
			c.next(key, ln).Release(context.WithoutCancel(ctx))
		} else {
			c.handOn(ln)
		}
		return nil, fmt.Errorf("%w: waited %s in this process's line for %s: %w", ErrNotObtained, bound, key, wctx.Err())
	}
	if b.pass {
		c.passes.Add(1)
		return c.next(key, ln), nil
	}
	// Our turn to take it in Redis, with what is left of the bound.
	left := bound
	if dl, ok := wctx.Deadline(); ok {
		left = max(time.Until(dl), 0)
	}
	call.Try = &left
	return c.takeGlobal(ctx, key, ln, call)
}

// Waiting is how many requests of this process wait in key's line (not
// counting the one that holds the lock or is taking it).
func (c *Cohort) Waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ln := c.lines[key]; ln != nil {
		return len(ln.waiters)
	}
	return 0
}

// takeGlobal takes fair's lock for the line, whose head we are.
func (c *Cohort) takeGlobal(ctx context.Context, key string, ln *cohortLine, call Call) (Lock, error) {
	l, err := c.fair.Obtain(ctx, key, call)
	if err != nil {
		c.handOn(ln)
		return nil, err
	}
	fl := l.(*fairLock)
	c.mu.Lock()
	ln.held, ln.seq, ln.since, ln.lease = fl, 0, c.fair.opts.Clock(), call.Lease > 0
	ln.speed.Restart()
	c.mu.Unlock()
	return c.next(key, ln), nil
}

// next is the next section of the cohort that holds ln's lock.
func (c *Cohort) next(key string, ln *cohortLine) *CohortSection {
	c.mu.Lock()
	defer c.mu.Unlock()
	ln.seq++
	ln.speed.AtBound(ln.seq >= int64(c.bound))
	return &CohortSection{c: c, key: key, ln: ln, token: ln.held.fence<<cohortSeqBits | ln.seq}
}

// handOn gives the line to its oldest waiter, who takes the lock in
// Redis itself, or frees it: a line nobody is in is forgotten.
func (c *Cohort) handOn(ln *cohortLine) {
	c.mu.Lock()
	if len(ln.waiters) == 0 {
		ln.busy = false
		if c.lines[ln.key] == ln {
			delete(c.lines, ln.key)
		}
		c.mu.Unlock()
		return
	}
	ch := ln.waiters[0]
	ln.waiters = ln.waiters[1:]
	c.mu.Unlock()
	ch <- baton{}
}

// CohortSection is one section of a cohort: the Lock a Cohort's Obtain
// returns.
type CohortSection struct {
	c     *Cohort
	key   string
	ln    *cohortLine
	token int64
	once  sync.Once
}

var (
	_ Tokened = (*CohortSection)(nil)
	_ Piped   = (*CohortSection)(nil)
)

// Token is the section's fencing token: the cohort's global token, times
// 2^20, plus the section's number in the cohort.
func (l *CohortSection) Token() int64 { return l.token }

// Send queues q down the line's pipe (Piped).
func (l *CohortSection) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) func() error {
	return l.ln.speed.Send(rdb, q, later)
}

// Line is the speed of the section's line.
func (l *CohortSection) Line() CohortLine { return l.ln.speed }

// Current says whether the cohort still holds the lock this section ran
// under: not given back, its lease neither lost nor replaced.
func (l *CohortSection) Current() bool {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	h := l.ln.held
	return h != nil && h.fence == l.token>>cohortSeqBits && !h.lost.Load()
}

// passTo decides how this section ends: the oldest waiter of the line,
// to pass the lock to, or nil when the lock goes back to Redis (then held
// is what to release, and the line keeps its waiters for handOn). Past
// the bound it passes only on an answer that nobody waits in Redis
// (the line's speed asks), and uses that answer up: the next pass past
// the bound needs one asked after this one.
func (l *CohortSection) passTo() (to chan baton, held *fairLock) {
	c, ln := l.c, l.ln
	c.mu.Lock()
	defer c.mu.Unlock()
	// Never pass a lease found lost, nor after a command of the cohort
	// failed (the line's MayPass): the lock goes back to Redis.
	pass := len(ln.waiters) > 0 && !ln.lease && !ln.held.lost.Load()
	within := ln.seq < int64(c.bound) && c.fair.opts.Clock().Sub(ln.since) < c.share
	if pass && (within || ln.seq < cohortSeqMax) && ln.speed.MayPass(within) {
		to = ln.waiters[0]
		ln.waiters = ln.waiters[1:]
		return to, nil
	}
	held, ln.held = ln.held, nil
	ln.speed.AtBound(false)
	return nil, held
}

// Release passes the lock to this process's next waiter, or gives it
// back in Redis (fair's release, which hands it to the oldest waiting
// instance) and lets the line's next waiter take it there.
func (l *CohortSection) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		to, held := l.passTo()
		if to != nil {
			to <- baton{pass: true} // the next section runs under our lease
			err = nil
			return
		}
		err = l.ln.speed.GiveBack(ctx, held)
		l.c.handOn(l.ln)
	})
	return err
}
