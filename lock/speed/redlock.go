package speed

import (
	"cmp"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/lockladder/lockladder/internal/line"
	"github.com/lockladder/lockladder/lock"
)

// The speed of redlock (rung 10): how a process's requests wait for it.
// None of it changes the algorithm (lock.Redlock.Attempt): every critical
// section still holds a lease of its own from a majority of the masters.
//
// When many clients try at once, each wins some masters and none wins a
// majority (a split vote); all give back what they won and try again
// together. The articles' retry (wait=fixed: 100 requests, each retrying
// every 10ms) spends most attempts that way: about a hundred sales a
// second, and 503s. So RedlockLine lines up (WaitQueue) a process's
// requests for one key in memory, first come first served, and only the
// head of the line asks the masters; 3 processes put 3 contenders on the
// masters, not 100. Releases are announced on the masters
// (lock.RedlockOptions.Notifier), so every process's head tries as soon
// as the lock frees, without polling.
//
// Its default, WaitRelay, also relays the lock down the line through the
// masters: a section that ends with another request waiting swaps its
// token for that request's on every master, with a fresh lease, in one
// script each (lock.RedlockLock.Relay), instead of a release on five and
// a SET NX on five. The swap is a Redlock attempt like any other (T1, T2,
// a majority within validity, or nothing is handed over), so when the
// masters go the sales stop; it costs 7 round trips a section instead of
// 12. A chain ends after 64 sections or half a lease, and the lock goes
// back to every process's head.
//
// WaitCohort goes one step further (rung 13's idea): a section that ends
// with another request in its line passes the lock on in memory, while
// more than half its validity is left, instead of releasing it on five
// masters for the next to take it on five again. The quorum is then paid
// once for many sections; each still runs within the lease's validity, at
// least half of it left when it starts.

// relayMax bounds a chain of relayed sections (WaitRelay): after it, or
// half a lease after the chain began, the lock goes back to every
// process's head, so one process's line cannot keep it from the others.
// It is cohort's bound, for the same reason.
const relayMax = 64

// RedlockLine puts r's requests for one key in a line per process, and
// passes (WaitCohort) or relays (WaitRelay, the default) the lock down
// it; WaitFixed, WaitBackoff and WaitNotify go straight to r, every
// request contending. The wait bound covers the line and the attempts.
func RedlockLine(r *lock.Redlock) lock.Locker {
	return &redlockLine{r: r, opts: r.Options()}
}

type redlockLine struct {
	r                 *lock.Redlock
	opts              lock.Options
	queue             line.Queue
	retries, handoffs atomic.Uint64
}

// Obtain waits in this process's line for key unless the call (or the
// Redlock's options) asks for the articles' loop. The Lock it returns
// also has Validity() time.Duration.
func (rl *redlockLine) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	switch mode := cmp.Or(c.Wait, rl.opts.WaitMode); mode {
	case lock.WaitFixed, lock.WaitBackoff, lock.WaitNotify:
		// Every request contends on the masters: the articles' way.
		return rl.r.Obtain(ctx, key, c)
	case "":
		return rl.obtainInLine(ctx, key, c, lock.WaitRelay)
	default:
		return rl.obtainInLine(ctx, key, c, mode)
	}
}

// Counts are the Redlock's, and the line's retries and handoffs.
func (rl *redlockLine) Counts() lock.Counts {
	n := rl.r.Counts()
	n.Retries += rl.retries.Load()
	n.Handoffs += rl.handoffs.Load()
	return n
}

// obtainInLine waits for key's turn in this process's line, then takes
// the lock on the masters (Attempt, in a loop of its own), unless the
// head before passed it on (WaitCohort) or relayed it (WaitRelay); the
// call's bound covers both.
func (rl *redlockLine) obtainInLine(ctx context.Context, key string, c lock.Call, mode lock.WaitMode) (lock.Lock, error) {
	bound := c.Bound(rl.opts.Wait)
	if bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	head, err := lock.WaitTurn(ctx, &rl.queue, key, bound)
	if err != nil {
		return nil, err
	}
	if l := rl.passedTo(head); l != nil {
		return l, nil
	}
	// The head makes attempts (Redlock.Attempt, the algorithm) until one
	// wins, woken between two when the lock's key is deleted on the
	// masters, or every QueuePause: Redlock.obtain's loop, for the one
	// request of this process that contends.
	w := rl.r.HeadWaiter(key) // before the first attempt: no release goes unheard
	token, ttl := uuid.NewString(), c.TTL(rl.opts.TTL)
	var last error // why the last attempt lost
	for {
		held, lost := rl.r.Attempt(ctx, key, token, ttl)
		if lost == nil {
			w.Done(true)
			l := &linedLock{RedlockLock: held, rl: rl, head: head, validity: held.Validity()}
			switch mode {
			case lock.WaitCohort:
				l.half = held.T1().Add(held.Until().Sub(held.T1()) / 2)
			case lock.WaitRelay:
				l.chain = &relayChain{n: 1, start: held.T1(), ttl: ttl}
			}
			return l, nil
		}
		// An attempt cut short by the end of the wait says less than
		// the complete one before it: keep that.
		if last == nil || ctx.Err() == nil {
			last = lost
		}
		rl.retries.Add(1)
		switch {
		case bound == 0:
			err = lock.ErrBusy
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: waited %s: %w", lock.ErrNotObtained, bound, ctx.Err())
		default:
			if _, werr := w.Wait(ctx); werr != nil {
				err = fmt.Errorf("%w: waited %s: %w", lock.ErrNotObtained, bound, werr)
			}
		}
		if err != nil {
			w.Done(false)
			head.Leave()
			return nil, fmt.Errorf("%w; last attempt: %w", err, last)
		}
	}
}

// linedLock is a Redlock section taken at the head of its process's line,
// or passed or relayed to it.
type linedLock struct {
	*lock.RedlockLock // shared by the sections passed in memory; released by the last
	rl                *redlockLine
	head              *line.Turn    // left on Release
	validity          time.Duration // left when the section began
	released          atomic.Bool
	half              time.Time   // WaitCohort: passed on in memory only before then
	chain             *relayChain // WaitRelay: may be relayed
}

// relayChain is where a relayed section stands in its chain.
type relayChain struct {
	n     int           // sections so far, this one included
	start time.Time     // when the chain's first section was granted
	ttl   time.Duration // the lease each section gets
}

// Validity is how long the lock was still safe to rely on when this
// section began: for a section passed in memory, what its lease had left.
func (l *linedLock) Validity() time.Duration { return l.validity }

// passedTo returns the lock the head before head passed on (WaitCohort)
// or relayed to it (WaitRelay), as a section of its own, or nil. A lease
// that ran out meanwhile (the waiter it was passed to gave up and nobody
// came for a while) is given back.
func (rl *redlockLine) passedTo(head *line.Turn) *linedLock {
	l, _ := head.Take().(*linedLock)
	if l == nil {
		return nil
	}
	l.head = head
	if l.validity = l.Until().Sub(rl.opts.Clock()); l.validity <= 0 {
		_ = l.RedlockLock.Release(context.Background()) // nobody to report to: the lease has ended anyway
		return nil
	}
	return l
}

// Release passes the lock on in memory (WaitCohort) or relays it on the
// masters (WaitRelay) to the next request in this process's line, when
// one waits and the lock may go on; otherwise it releases it as
// lock.RedlockLock.Release does. Then the next request in the line may
// try.
func (l *linedLock) Release(ctx context.Context) error {
	if l.released.Swap(true) {
		return fmt.Errorf("%w: redlock: %s already released", lock.ErrNotHeld, l.Key())
	}
	if !l.half.IsZero() && l.rl.opts.Clock().Before(l.half) {
		next := &linedLock{RedlockLock: l.RedlockLock, rl: l.rl, half: l.half}
		if l.head.Pass(next) {
			l.rl.handoffs.Add(1)
			return nil
		}
	}
	defer l.head.Leave()
	if l.relayOn() {
		held, err := l.Relay(ctx, l.chain.ttl)
		if held == nil {
			return err
		}
		next := &linedLock{RedlockLock: held, rl: l.rl, validity: held.Validity(),
			chain: &relayChain{n: l.chain.n + 1, start: l.chain.start, ttl: l.chain.ttl}}
		if l.head.Pass(next) {
			l.rl.handoffs.Add(1)
			return nil
		}
		// The waiter left meanwhile: give back the lock relayed to it.
		return held.Release(ctx)
	}
	return l.RedlockLock.Release(ctx)
}

// relayOn reports whether l's section, ending with another request in its
// line, may relay the lock to it.
func (l *linedLock) relayOn() bool {
	c := l.chain
	return c != nil && c.n < relayMax && l.rl.opts.Clock().Before(c.start.Add(c.ttl/2)) && l.head.Waiting()
}
