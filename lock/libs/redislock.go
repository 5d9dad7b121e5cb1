package libs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockladder/lockladder/lock"
)

// Redislock is github.com/bsm/redislock v0.9.4 called as its README shows,
// a library rung beside the lab's own: Obtain(ctx, key, lease, opts),
// the business, Release. The lock is rung 6's (SET key <random token> NX
// PX lease; release by a Lua compare-and-delete), so it fails as rung 6
// does.
//
// Its flaw, which its README does not hide: nothing renews the lease. A
// business that outlives it lets B in while A still writes, and A's
// Release then returns redislock.ErrLockNotHeld (reported here as
// lock.ErrNotHeld wrapping it): the library notices only after the damage.
// RedislockRefresh adds what its README suggests, Refresh.
//
// The wait is the library's: lock.Options.RetryStrategy LinearBackoff(10ms)
// (the lab's -retry, the articles' fixed sleep), with the request's bound
// as the context's deadline (Obtain retries until it; without one it
// would stop after one lease). Every request polls Redis on its own: no
// line per process, unlike the lab's rungs.
type Redislock struct {
	c         *redislock.Client
	ttl, wait time.Duration
}

// redislockRetry is the sleep between Obtain's attempts.
const redislockRetry = 10 * time.Millisecond

var _ lock.Locker = (*Redislock)(nil)

// NewRedislock returns the library's lock over rdb: lock.Options.TTL is the
// lease (a lock.Call's Lease overrides it), lock.Options.Wait the bound.
func NewRedislock(rdb redislock.RedisClient, o lock.Options) *Redislock {
	o = o.WithDefaults()
	return &Redislock{c: redislock.New(rdb), ttl: o.TTL, wait: o.Wait}
}

// Obtain calls the library's Obtain, retrying every 10ms until the call's
// bound (once for try=0).
func (r *Redislock) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	l, _, err := r.obtain(ctx, key, c)
	if err != nil {
		return nil, err
	}
	return &redislockLock{l: l}, nil
}

// obtain is Obtain, returning the library's lock and the lease asked.
func (r *Redislock) obtain(ctx context.Context, key string, c lock.Call) (*redislock.Lock, time.Duration, error) {
	bound, lease := r.wait, c.TTL(r.ttl)
	if c.Try != nil {
		bound = max(*c.Try, 0)
	}
	opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(redislockRetry)}
	if bound == 0 {
		opt = nil // the library's default: one attempt
		bound = lease
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	l, err := r.c.Obtain(wctx, key, lease, opt)
	switch {
	case err == nil:
		return l, lease, nil
	case errors.Is(err, redislock.ErrNotObtained) && opt == nil:
		return nil, 0, fmt.Errorf("%w: %w", lock.ErrBusy, err)
	case errors.Is(err, redislock.ErrNotObtained),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil, 0, fmt.Errorf("%w: redislock: waited %s: %w", lock.ErrNotObtained, bound, err)
	}
	return nil, 0, fmt.Errorf("lock: redislock: obtain %s: %w", key, err)
}

type redislockLock struct{ l *redislock.Lock }

// Release calls the library's Release: lock.ErrNotHeld (wrapping
// redislock.ErrLockNotHeld) when the lease had lapsed.
func (l *redislockLock) Release(ctx context.Context) error {
	return redislockReleased(l.l.Key(), l.l.Release(ctx))
}

func redislockReleased(key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		return fmt.Errorf("%w: %w", lock.ErrNotHeld, err)
	}
	return fmt.Errorf("lock: redislock: release %s: %w", key, err)
}
