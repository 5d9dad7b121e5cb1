package libs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// Redsync is github.com/go-redsync/redsync/v4 v4.18.1 called as its README
// shows, a library rung beside the lab's own: rs.NewMutex(key,
// WithExpiry(lease)), LockContext, the business, UnlockContext. Over one
// pool (the lab's Redis: the rung `redsync`) it is rung 6's lock, SET NX
// PX and a compare-and-delete; over five independent masters (the rung
// `redsync-redlock`) it is Redlock, as rung 10 without the lab's line
// and relay: a majority within validity (expiry minus the time taken
// minus 1% drift) wins, else it releases what it won and tries again.
//
// Its flaws, which its README leaves to the reader: nothing renews the
// lease unless the caller calls Extend, so a business past it lets B in
// while A still writes; a process paused past it does the same; over the
// masters, a majority restarted empty grants the lock again (article 002).
// A's Unlock then fails: ErrLockAlreadyExpired when the key is gone, an
// ErrTaken when B holds it. Release reports both as lock.ErrNotHeld wrapping
// the library's error, the error users trip on (the handler logs it as
// "release failed").
//
// The wait is the library's: a random 50-250ms between attempts (its
// default), every request on its own, until the request's bound (the
// tries are made unbounded so that the bound, not the default 32 tries,
// ends the wait). With try=0 it makes one attempt (TryLockContext).
type Redsync struct {
	rs        *redsync.Redsync
	ttl, wait time.Duration
}

var _ lock.Locker = (*Redsync)(nil)

// NewRedsync returns the library's Mutex over the given servers: one for
// a plain lock, several independent masters for Redlock. lock.Options.TTL is
// the expiry (a lock.Call's Lease overrides it), lock.Options.Wait the bound.
func NewRedsync(servers []redis.UniversalClient, o lock.Options) *Redsync {
	o = o.WithDefaults()
	pools := make([]redsyncredis.Pool, len(servers))
	for i, s := range servers {
		pools[i] = goredis.NewPool(s)
	}
	return &Redsync{rs: redsync.New(pools...), ttl: o.TTL, wait: o.Wait}
}

// Obtain locks a fresh Mutex within the call's bound.
func (r *Redsync) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	bound := r.wait
	if c.Try != nil {
		bound = max(*c.Try, 0)
	}
	m := r.rs.NewMutex(key, redsync.WithExpiry(c.TTL(r.ttl)), redsync.WithTries(math.MaxInt32))
	if bound == 0 {
		err := m.TryLockContext(ctx)
		switch {
		case err == nil:
			return &redsyncLock{m}, nil
		case redsyncTaken(err) || errors.Is(err, redsync.ErrFailed):
			return nil, fmt.Errorf("%w: %w", lock.ErrBusy, err)
		}
		return nil, fmt.Errorf("lock: redsync: lock %s: %w", key, err)
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	// With unbounded tries LockContext ends only when it holds the lock
	// or the context ends (ErrFailed): what failed on the way, a master
	// down, is not said.
	if err := m.LockContext(wctx); err != nil {
		return nil, fmt.Errorf("%w: redsync: waited %s: %w", lock.ErrNotObtained, bound, err)
	}
	return &redsyncLock{m}, nil
}

// redsyncTaken reports whether err says that another holder has the lock.
func redsyncTaken(err error) bool {
	var taken *redsync.ErrTaken
	var node *redsync.ErrNodeTaken
	return errors.As(err, &taken) || errors.As(err, &node)
}

type redsyncLock struct{ m *redsync.Mutex }

// Release unlocks: lock.ErrNotHeld, wrapping the library's error, when a
// majority had let the lock expire or given it to another holder.
func (l *redsyncLock) Release(ctx context.Context) error {
	ok, err := l.m.UnlockContext(ctx)
	switch {
	case ok:
		return nil
	case err == nil:
		return lock.ErrNotHeld
	case errors.Is(err, redsync.ErrLockAlreadyExpired) || redsyncTaken(err):
		return fmt.Errorf("%w: %w", lock.ErrNotHeld, err)
	}
	return fmt.Errorf("lock: redsync: unlock %s: %w", l.m.Name(), err)
}
