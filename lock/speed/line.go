package speed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockladder/lockladder/internal/line"
	"github.com/lockladder/lockladder/lock"
)

// Line puts a process's requests for one key in a line in memory, first
// come first served, in front of a rung that polls (lock.Poll): only the
// head of the line asks the back end for the lock, trying the rung
// itself and between two tries woken when the lock's deletion is
// announced, or polling briefly (lock.Options.HeadWaiter); the others
// wait in memory, costing Redis nothing. With 100 requests over 3
// processes, 3 contend instead of 100, and a freed lock is taken at once
// instead of at someone's next blind retry. Mutual exclusion still comes
// from the rung: the line only decides which of this process's requests
// may contend (Redisson keeps a semaphore per lock name in each JVM).
//
// It lines up the calls that wait by lock.WaitQueue, or by o.WaitMode's
// default when they name no mode; the others go straight to l. o is the
// rung's: Wait bounds the line and the tries together. A Locker that is
// not lock.Polled is asked to wait by lock.WaitQueue at the head.
func Line(l lock.Locker, o lock.Options) lock.Locker {
	ln := &lined{locker: l, opts: o.WithDefaults()}
	if p, ok := l.(lock.Polled); ok {
		// The head waits as the rung's own options say: woken by a
		// Notifier only if the rung has one (the PostgreSQL rungs drop
		// the app's; waiting on it, their heads slept its 100ms fallback
		// between tries).
		ln.rung, ln.opts = p.Rung(), p.Options()
	}
	return ln
}

type lined struct {
	locker  lock.Locker
	rung    lock.Rung // nil: the head asks locker
	opts    lock.Options
	queue   line.Queue
	retries atomic.Uint64 // the head's tries that failed
}

func (l *lined) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	if mode := cmp.Or(c.Wait, l.opts.WaitMode); mode != "" && mode != lock.WaitQueue {
		return l.locker.Obtain(ctx, key, c)
	}
	c.Wait = lock.WaitQueue
	// A named owner may hold the lock already (reentrant's re-entry): it
	// must not queue behind the requests that wait for it.
	if c.Owner != "" {
		once := c
		once.Try = new(time.Duration)
		held, err := l.locker.Obtain(ctx, key, once)
		switch {
		case err == nil:
			return held, nil
		case !errors.Is(err, lock.ErrBusy) && ctx.Err() == nil:
			return nil, err
		}
	}
	bound := c.Bound(l.opts.Wait)
	if bound > 0 { // it covers the line and the tries
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	head, err := lock.WaitTurn(ctx, &l.queue, key, bound)
	if err != nil {
		return nil, err
	}
	// Once we hold the lock (or give up), the next request of this
	// process takes our place at the head and waits for our release.
	defer head.Leave()
	if l.rung == nil {
		return l.locker.Obtain(ctx, key, c)
	}
	return l.head(ctx, key, c, bound)
}

// head tries the rung until it holds the lock, the bound passes or ctx
// ends, waiting between two tries as the head of a line does. It is
// lock.Poll's loop for the one request of this process that contends.
func (l *lined) head(ctx context.Context, key string, c lock.Call, bound time.Duration) (held lock.Lock, err error) {
	w := l.opts.HeadWaiter(key) // before the first try: no release goes unheard
	defer func() { w.Done(err == nil) }()
	for {
		held, ok, err := l.rung.Try(ctx, key, c)
		if !ok && err == nil {
			l.retries.Add(1)
		}
		switch {
		case ok:
			return held, nil
		case err != nil && !errors.Is(err, ctx.Err()):
			// The back end failed (Redis unreachable, say): report that,
			// not a lock that merely seemed busy.
			return nil, err
		case bound == 0:
			return nil, lock.ErrBusy
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: waited %s: %w", lock.ErrNotObtained, bound, ctx.Err())
		}
		if _, err := w.Wait(ctx); err != nil {
			return nil, fmt.Errorf("%w: waited %s: %w", lock.ErrNotObtained, bound, err)
		}
	}
}

// Counts are the rung's, and the head's retries.
func (l *lined) Counts() lock.Counts {
	var n lock.Counts
	if r, ok := l.locker.(lock.Counter); ok {
		n = r.Counts()
	}
	n.Retries += l.retries.Load()
	return n
}
