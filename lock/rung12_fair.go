package lock

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed rung12_fair_acquire.lua
	luaFairAcquireSrc string
	//go:embed rung12_fair_release.lua
	luaFairReleaseSrc string
	//go:embed rung12_fair_renew.lua
	luaFairRenewSrc string

	luaFairAcquire = redis.NewScript(luaFairAcquireSrc)
	luaFairRelease = redis.NewScript(luaFairReleaseSrc)
	luaFairRenew   = redis.NewScript(luaFairRenewSrc)
)

// Fair is rung 11's fenced lease with the waiting done by Redis instead of
// by luck. Every rung above waits the articles' way: sleep, try again. A
// freed lock sits idle until some sleeper wakes, most tries are wasted
// round trips, and who gets the lock next is whoever happens to try first,
// so an unlucky waiter can lose every race until its wait bound (the tail
// of the benchmark: p99 near a second, behind a p50 of milliseconds).
//
// Here a waiter that finds the lock held joins a FIFO queue in Redis (a
// list of tokens, each with a deadline), in the same script that tried the
// lock, and sleeps. The release script does not just delete the lock: it
// pops the oldest waiter whose deadline has not passed, writes that
// waiter's token into the lock key with a fresh lease and the next fencing
// token, and publishes a message naming it. The Notifier wakes exactly that
// waiter, which holds the lock already: no herd, no idle gap, no polling but
// a slow refresh tick (below), and waiters are served in the order they
// came.
//
// A waiter that gives up leaves the queue (and passes the lock on if it was
// handed to it meanwhile). One that dies stops refreshing its entry, which
// goes stale within three refresh ticks and is skipped. Each waiter also
// wakes on its refresh tick (TTL/4, at most 250ms) to keep its entry live
// and to catch a handoff whose message was lost: that is the only polling
// left. Without a Notifier, waiters find their handoff by polling with
// Options.Backoff; the order is still FIFO.
//
// It keeps everything below it: the owner token (only the holder releases
// or renews), the fencing token (the Lock is Tokened: handlers write with
// it, and a holder paused past its lease is refused), and rung 9's watchdog
// (the lease is renewed every TTL/3 while held, and stops on release).
//
// What it still shows: the lock is one Redis key, so a failover can lose
// it (fencing keeps the data right, not the exclusion), and every sale
// still pays the lock's round trips: acquiring, being woken, releasing.
// The atomic script pays one.
type Fair struct {
	counts
	rdb  redis.Cmdable
	opts Options
	// tick is how often a waiter refreshes its queue entry; an entry not
	// refreshed for three ticks is stale.
	tick time.Duration
}

var _ Locker = (*Fair)(nil)

// NewFair returns the FIFO handoff lock. Options.WaitMode and Call.Wait do
// not apply: a fair waiter always waits for its handoff (rung12_fair_handoff.go).
func NewFair(rdb redis.Cmdable, o Options) *Fair {
	o = o.WithDefaults()
	return &Fair{rdb: rdb, opts: o, tick: min(max(o.TTL/4, 5*time.Millisecond), 250*time.Millisecond)}
}

// HandoffChannel is the default channel on which fair's scripts publish
// each handoff, naming the waiter that now holds the lock and its fencing
// token: "<waiter token>|<fencing token>". A Notifier may listen on
// another (Notifier.Channel).
const HandoffChannel = "lockladder:handoff"

// channel is where handoffs are announced: the Notifier's, which listens.
func (f *Fair) channel() string {
	if f.opts.Notifier != nil {
		return f.opts.Notifier.Channel()
	}
	return HandoffChannel
}

// QueueKey is the list of key's waiters, oldest first; QueueKey(key)+":live"
// holds their deadlines.
func QueueKey(key string) string { return key + ":queue" }

func fairKeys(key string) []string {
	q := QueueKey(key)
	return []string{key, q, q + ":live", FenceKey(key)}
}

// Obtain takes key at once if it is free and nobody waits; otherwise it
// queues and waits for the release that hands the lock over, at most the
// wait bound. The Lock it returns is also Tokened.
func (f *Fair) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	token := uuid.NewString()
	keys := fairKeys(key)
	// A waiter that gives up leaves the queue, and passes the lock on if
	// it was handed to it meanwhile: a waiter never wedges the queue.
	leave := func(ctx context.Context) {
		_ = luaFairRelease.Run(ctx, f.rdb, keys, token, leaseMS(f.opts.TTL), f.channel(), "1").Err()
	}
	w := newHandoffWait(f.opts, token, f.tick, context.WithoutCancel(ctx), leave)
	ttl := c.TTL(f.opts.TTL)
	took := false // by our own try; otherwise it was handed to us
	err := acquire(ctx, f.opts, c, w, func(ctx context.Context) (bool, error) {
		lives := 3 * f.tick
		if dl, ok := ctx.Deadline(); ok {
			lives = min(lives, time.Until(dl)+f.tick)
		}
		n, err := luaFairAcquire.Run(ctx, f.rdb, keys, token, leaseMS(ttl), leaseMS(lives), f.channel()).Int64()
		if err != nil {
			return false, fmt.Errorf("lock: fair acquire %s: %w", key, err)
		}
		w.fence = n
		if took = n > 0; !took {
			f.retries.Add(1)
		}
		return took, nil
	})
	if err != nil {
		return nil, err
	}
	if !took {
		f.handoffs.Add(1)
	}
	l := &fairLock{f: f, keys: keys, token: token, fence: w.fence}
	if c.Lease == 0 { // an explicit lease: no renewal
		l.wd = startWatchdog(f.opts.Ticker, ttl, func(ctx context.Context) (bool, error) {
			n, err := luaFairRenew.Run(ctx, f.rdb, keys[:1], token, leaseMS(ttl)).Int64()
			return n != 0, err
		}, func(*watchdog) { l.lost.Store(true) })
	}
	return l, nil
}

type fairLock struct {
	f     *Fair
	keys  []string
	token string
	fence int64

	wd   *watchdog
	lost atomic.Bool // a renewal found the lease gone
	once sync.Once
}

var _ Tokened = (*fairLock)(nil)

func (l *fairLock) Token() int64 { return l.fence }

// Release hands the lock to the oldest live waiter, or deletes it when
// nobody waits, and stops the watchdog.
func (l *fairLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		l.wd.halt() // no renewal may race the release
		defer l.wd.wait()
		var n int64
		n, err = luaFairRelease.Run(ctx, l.f.rdb, l.keys, l.token, leaseMS(l.f.opts.TTL), l.f.channel(), "0").Int64()
		err = releaseResult(l.keys[0], n, err)
	})
	return err
}

var _ PipelineReleaser = (*fairLock)(nil)

// ReleaseIn is rung 12's Release in p: the watchdog stops now, and the
// handoff script runs behind the business's last write (EVAL: a NOSCRIPT
// in a pipeline would skip it).
func (l *fairLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	var cmd *redis.Cmd
	first := false
	l.once.Do(func() {
		first = true
		l.wd.halt()
		cmd = luaFairRelease.Eval(ctx, p, l.keys, l.token, leaseMS(l.f.opts.TTL), l.f.channel(), "0")
	})
	return func() error {
		if !first {
			return ErrNotHeld
		}
		l.wd.wait()
		n, err := cmd.Int64()
		return releaseResult(l.keys[0], n, err)
	}
}
