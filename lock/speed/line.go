package speed

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/lockladder/lockladder/internal/line"
	"github.com/lockladder/lockladder/lock"
)

// Line puts a process's requests for one key in a line in memory, first
// come first served, in front of a rung that polls (lock.Poll): only the
// head of the line asks the back end for the lock, polling briefly or
// woken when the lock's deletion is announced (lock.WaitQueue); the
// others wait in memory, costing Redis nothing. With 100 requests over 3
// processes, 3 contend instead of 100, and a freed lock is taken at once
// instead of at someone's next blind retry. Mutual exclusion still comes
// from the rung: the line only decides which of this process's requests
// may contend (Redisson keeps a semaphore per lock name in each JVM).
//
// It lines up the calls that wait by lock.WaitQueue, or by o.WaitMode's
// default when they name no mode; the others go straight to the rung. o
// is the rung's: Wait bounds the line and the tries together.
func Line(rung lock.Locker, o lock.Options) lock.Locker {
	return &lined{rung: rung, opts: o.WithDefaults()}
}

type lined struct {
	rung  lock.Locker
	opts  lock.Options
	queue line.Queue
}

func (l *lined) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	if mode := cmp.Or(c.Wait, l.opts.WaitMode); mode != "" && mode != lock.WaitQueue {
		return l.rung.Obtain(ctx, key, c)
	}
	c.Wait = lock.WaitQueue // the head's way: poll briefly, or be woken
	// A named owner may hold the lock already (reentrant's re-entry): it
	// must not queue behind the requests that wait for it.
	if c.Owner != "" {
		once := c
		once.Try = new(time.Duration)
		held, err := l.rung.Obtain(ctx, key, once)
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
	return l.rung.Obtain(ctx, key, c)
}

// Counts are the rung's.
func (l *lined) Counts() lock.Counts {
	if n, ok := l.rung.(lock.Counter); ok {
		return n.Counts()
	}
	return lock.Counts{}
}
