package libs

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockladder/lockladder/lock"
)

// RedislockRefresh is Redislock plus the one fix its README suggests:
// lock.Refresh(ctx, lease, nil) while the business runs, here every
// lease/3 from a goroutine started by Obtain and stopped by Release (the
// lab's handler runs the business between the two). It differs from
// Redislock by that loop alone, and is to it what rung 9's watchdog is to
// rung 6.
//
// A slow business now keeps its lease. What it cannot survive is a
// process that stops (GC, SIGSTOP): the refreshing goroutine stops with
// it, the lease lapses, B takes the lock, and A wakes and writes. The
// first Refresh after the pause returns redislock.ErrNotObtained, too
// late; the loop then stops, and Release returns lock.ErrNotHeld.
type RedislockRefresh struct {
	r      *Redislock
	ticker func(time.Duration) lock.Ticker // lock.Options.Ticker
}

var _ lock.Locker = (*RedislockRefresh)(nil)

// NewRedislockRefresh returns redislock with a refresh loop over rdb:
// lock.Options.TTL is the lease (a lock.Call's Lease overrides it), renewed every
// third of it; lock.Options.Wait bounds the wait.
func NewRedislockRefresh(rdb redislock.RedisClient, o lock.Options) *RedislockRefresh {
	return &RedislockRefresh{r: NewRedislock(rdb, o), ticker: o.WithDefaults().Ticker}
}

// Obtain takes the lock as Redislock does and starts refreshing it.
func (r *RedislockRefresh) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	l, lease, err := r.r.obtain(ctx, key, c)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	h := &refreshedLock{l: l, cancel: cancel, done: make(chan struct{})}
	// The ticker is made here, by the holder, as the lab's watchdog makes
	// its own (lock.Options.Ticker): time.NewTicker's, or the explorer's.
	every := max(lease/3, time.Millisecond)
	go h.refresh(rctx, r.ticker(every), every, lease)
	return h, nil
}

type refreshedLock struct {
	l      *redislock.Lock
	cancel context.CancelFunc // called by Release
	done   chan struct{}      // closed when the loop has returned
	once   sync.Once
}

// refresh extends the lease to a full lease every third of one, until
// Release or until the lock is found lost. A Redis error is retried at
// the next tick: the lease may still outlive it.
func (h *refreshedLock) refresh(ctx context.Context, t lock.Ticker, every, lease time.Duration) {
	defer close(h.done)
	defer t.Stop()
	for t.Wait(ctx) {
		rctx, cancel := context.WithTimeout(ctx, every)
		err := h.l.Refresh(rctx, lease, nil)
		cancel()
		if errors.Is(err, redislock.ErrNotObtained) {
			return // lost: the key expired, or another holder has it
		}
	}
}

// Release stops the refreshing, then releases as Redislock does.
func (h *refreshedLock) Release(ctx context.Context) error {
	err := lock.ErrNotHeld
	h.once.Do(func() {
		h.cancel()
		<-h.done
		err = redislockReleased(h.l.Key(), h.l.Release(ctx))
	})
	return err
}
