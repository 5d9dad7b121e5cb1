package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/lockladder/lockladder/internal/line"
)

// The speed of redlock: how a process's requests wait for it. None of it
// changes the algorithm (Redlock.attempt): every critical section still
// holds a lease of its own from a majority of the masters.
//
// When many clients try at once, each wins some masters and none wins a
// majority (a split vote); all give back what they won and try again
// together. The articles' retry (wait=fixed: 100 requests, each retrying
// every 10ms) spends most attempts that way: about a hundred sales a
// second, and 503s. So redlock lines up (WaitQueue) a process's requests
// for one key in memory, first come first served, and only the head of
// the line asks the masters; 3 processes put 3 contenders on the masters,
// not 100. Releases are announced on the masters
// (RedlockOptions.Notifier), so every process's head tries as soon as the
// lock frees, without polling.
//
// Its default, WaitRelay, also relays the lock down the line through the
// masters: a section that ends with another request waiting swaps its
// token for that request's on every master, with a fresh lease, in one
// script each (speed_redlock_relay.go), instead of a release on five and
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

// obtainInLine waits for key's turn in this process's line, then takes
// the lock on the masters (attempt, in a loop of its own), unless the
// head before passed it on (WaitCohort) or relayed it (WaitRelay); the
// call's bound covers both.
func (r *Redlock) obtainInLine(ctx context.Context, key string, c Call, mode WaitMode) (Lock, error) {
	bound := r.opts.bound(c)
	if bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	head, err := WaitTurn(ctx, &r.queue, key, bound)
	if err != nil {
		return nil, err
	}
	if l := r.passedTo(head); l != nil {
		return l, nil
	}
	// The head makes attempts (Redlock.attempt, the algorithm) until one
	// wins, woken between two when the lock's key is deleted on the
	// masters, or every r.pause: obtain's loop, for the one request of
	// this process that contends.
	w := r.opts.headWaiter(r.notifier, key, r.pause) // before the first attempt: no release goes unheard
	token, ttl := uuid.NewString(), c.TTL(r.opts.TTL)
	var last error // why the last attempt lost
	for {
		held, lost := r.attempt(ctx, key, token, ttl)
		if lost == nil {
			w.Done(true)
			l := &linedLock{redlockLock: held, head: head}
			switch mode {
			case WaitCohort:
				l.half = held.t1.Add((ttl - r.drift) / 2)
			case WaitRelay:
				l.chain = &relayChain{id: held.token, n: 1, start: held.t1, ttl: ttl}
			}
			return l, nil
		}
		// An attempt cut short by the end of the wait says less than
		// the complete one before it: keep that.
		if last == nil || ctx.Err() == nil {
			last = lost
		}
		r.retries.Add(1)
		switch {
		case bound == 0:
			err = ErrBusy
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
		default:
			if _, werr := w.Wait(ctx); werr != nil {
				err = fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, werr)
			}
		}
		if err != nil {
			w.Done(false)
			head.Leave()
			return nil, fmt.Errorf("%w; last attempt: %w", err, last)
		}
	}
}

// linedLock is a Redlock section taken at the head of its process's line.
type linedLock struct {
	*redlockLock
	head  *line.Turn  // left on Release
	half  time.Time   // WaitCohort: passed on in memory only before then
	chain *relayChain // WaitRelay: may be relayed
}

// passedTo returns the lock the head before head passed on (WaitCohort)
// or relayed to it (WaitRelay), as a section of its own, or nil. A lease
// that ran out meanwhile (the waiter it was passed to gave up and nobody
// came for a while) is given back.
func (r *Redlock) passedTo(head *line.Turn) *linedLock {
	l, _ := head.Take().(*linedLock)
	if l == nil {
		return nil
	}
	l.head = head
	if l.validity = l.until.Sub(r.opts.Clock()); l.validity <= 0 {
		r.onMasters(context.Background(), l.releaser(), roundOpts{after: l.ends})
		return nil
	}
	return l
}

// Release passes the lock on in memory (WaitCohort) or relays it on the
// masters (WaitRelay) to the next request in this process's line, when
// one waits and the lock may go on; otherwise it releases it as
// redlockLock.Release does. Then the next request in the line may try.
func (l *linedLock) Release(ctx context.Context) error {
	if l.released.Swap(true) {
		return fmt.Errorf("%w: redlock: %s already released", ErrNotHeld, l.key)
	}
	if !l.half.IsZero() && l.r.opts.Clock().Before(l.half) {
		next := &linedLock{redlockLock: &redlockLock{r: l.r, key: l.key, token: l.token, t1: l.t1, until: l.until, ends: l.ends}, half: l.half}
		if l.head.Pass(next) {
			l.r.handoffs.Add(1)
			return nil
		}
	}
	defer l.head.Leave()
	if l.relayOn() {
		next, err := l.r.relay(ctx, l)
		switch {
		case next == nil:
			return err
		case l.head.Pass(next):
			l.r.handoffs.Add(1)
			return nil
		}
		// The waiter left meanwhile: give back the lock relayed to it.
		return l.r.release(ctx, next.key, next.releaser(), next.ends)
	}
	return l.r.release(ctx, l.key, l.releaser(), l.ends)
}
