package lock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// GetSet is the SETNX/GETSET algorithm of the articles (docs/ladder.md,
// rung 8), their fix for rung 7: the lease still lives in the value, as an
// expiry timestamp judged by the waiters' clocks, but a waiter takes an
// expired lock over with one GETSET, and wins only if the value it
// replaced is still the expired one it read. Of two waiters that saw the
// same expired lock, one wins.
//
//	acquire: SETNX key <now+ttl+1>; if that fails, GET key; if the stored
//	         expiry is past, GETSET key <now+ttl+1>, and we win only if the
//	         old value is still the expired one we read (else another waiter
//	         got there first).
//	release: DEL key, but only if our clock is still before our expiry.
//
// A crashed holder's lock is taken over once its expiry passes, so there is
// no deadlock. The races it shows:
//
//   - Clocks must agree. "Expired" is decided by the waiter's clock
//     (Options.Clock, run ahead by Call.Skew): an instance whose clock
//     runs ahead by more than the TTL takes a live lock from its holder:
//     OVERSOLD under skew.
//   - A slow holder still loses the lock once its expiry passes, as in
//     rung 6; then its release check sees the expiry passed and leaves the
//     new holder's key alone, but both have already run at once.
//   - A waiter that loses the GETSET race has still written its own expiry
//     over the winner's, so the lock held by the winner carries the loser's
//     timestamp. A known flaw of the algorithm; the skew is small.
//   - The check before DEL and the DEL are two steps, as in rung 5.
//
// Rung 9 stops the lease from lapsing while the holder is alive: a
// watchdog renews it.
type GetSet struct {
	rdb   redis.Cmdable
	ttl   time.Duration
	clock func() time.Time
}

// NewGetSet returns the expiry-timestamp lock, waiting as o says.
// Options.Clock is the clock this instance judges expiries by.
func NewGetSet(rdb redis.Cmdable, o Options) Locker {
	o = o.WithDefaults()
	return Poll(GetSet{rdb: rdb, ttl: o.TTL, clock: o.Clock}, o)
}

// Try takes key with SETNX if it is free, else takes it over with GETSET
// if its expiry has passed by our clock.
func (l GetSet) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	clock := c.clock(l.clock)
	now := clock()
	expiry := now.Add(c.TTL(l.ttl)).UnixMilli() + 1
	held := &expiryLock{rdb: l.rdb, key: key, expiry: expiry, clock: clock}
	ok, err := l.rdb.SetNX(ctx, key, expiry, 0).Result()
	if err != nil {
		return nil, false, wrap(err, "SETNX", key)
	}
	if ok {
		return held, true, nil
	}

	cur, err := l.rdb.Get(ctx, key).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil // released meanwhile: SETNX again
	case err != nil:
		return nil, false, wrap(err, "GET", key)
	case cur >= now.UnixMilli():
		return nil, false, nil // not expired, by our clock
	}

	fault.Inject(ctx, fault.Expired)
	// GETSET is deprecated since Redis 6.2 in favour of SET ... GET,
	// which does the same; the articles use GETSET.
	old, err := l.rdb.GetSet(ctx, key, expiry).Int64()
	switch {
	case errors.Is(err, redis.Nil):
		// Released between our GET and GETSET: the key was free and
		// GETSET, one atomic command, made it ours. (The articles would
		// give up here and leave their expiry behind, blocking everyone
		// until it passes.)
		return held, true, nil
	case err != nil:
		return nil, false, wrap(err, "GETSET", key)
	}
	return held, old == cur, nil
}
