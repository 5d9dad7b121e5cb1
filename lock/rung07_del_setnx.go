package lock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// DelSetNX is the first answer the articles give to rung 2's deadlock that
// does not trust a Redis TTL (docs/ladder.md, rung 7): the lease lives in
// the value, as an expiry timestamp, and waiters judge it by their own
// clocks. The key itself has no TTL.
//
//	acquire: SETNX key <now+ttl+1>; if that fails, GET key; if the stored
//	         expiry is past, DEL key, then SETNX key <now+ttl+1> again.
//	release: DEL key, but only if our clock is still before our expiry.
//
// A crashed holder's lock is taken over once its expiry passes, so there is
// no deadlock. The race it shows (the articles' P2 and P3): when the
// expired lock is seen by two waiters, both DEL it and both SETNX. P2's
// SETNX wins, then P3's DEL deletes P2's fresh lock and P3's SETNX wins
// too: two holders, OVERSOLD. It takes a holder dying with many waiting
// (the crash-wait scenario, which widens the window between the GET and
// the DEL at fault.Expired). Rung 8 replaces the DEL and SETNX by one GETSET.
type DelSetNX struct {
	rdb   redis.Cmdable
	ttl   time.Duration
	clock func() time.Time
}

// NewDelSetNX returns the expiry-timestamp, DEL-then-SETNX lock, waiting as
// o says. Options.Clock is the clock this instance judges expiries by.
func NewDelSetNX(rdb redis.Cmdable, o Options) Locker {
	o = o.WithDefaults()
	return Poll(DelSetNX{rdb: rdb, ttl: o.TTL, clock: o.Clock}, o)
}

// Try takes key with SETNX if it is free, else, if its expiry has passed
// by our clock, deletes it and takes it with SETNX.
func (l DelSetNX) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	clock := c.clock(l.clock)
	now := clock()
	expiry := now.Add(c.TTL(l.ttl)).UnixMilli() + 1
	held := &expiryLock{rdb: l.rdb, key: key, expiry: expiry, clock: clock}
	ok, err := l.rdb.SetNX(ctx, key, expiry, 0).Result()
	if err != nil || ok {
		return held, ok, wrap(err, "SETNX", key)
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
	// Expired: delete it and take it. Another waiter that read the same
	// expired value does the same, and may delete the lock we are about
	// to take.
	fault.Inject(ctx, fault.Expired)
	if err := l.rdb.Del(ctx, key).Err(); err != nil {
		return nil, false, wrap(err, "DEL", key)
	}
	ok, err = l.rdb.SetNX(ctx, key, expiry, 0).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SETNX", key)
	}
	return held, true, nil
}

// clock is the call's clock: base (Options.Clock), run ahead by c.Skew.
// The lock it takes keeps it, to judge its own release by.
func (c Call) clock(base func() time.Time) func() time.Time {
	if c.Skew == 0 {
		return base
	}
	return func() time.Time { return base().Add(c.Skew) }
}

// expiryLock is a lock whose lease is the expiry timestamp in its value
// (rungs 7 and 8).
type expiryLock struct {
	rdb    redis.Cmdable
	key    string
	expiry int64 // Unix ms
	clock  func() time.Time
}

// Release DELs the key if our clock says our expiry has not passed; past
// it, the lock may be someone else's, so it returns ErrNotHeld and leaves
// the key.
func (l *expiryLock) Release(ctx context.Context) error {
	if l.clock().UnixMilli() >= l.expiry {
		return ErrNotHeld
	}
	return delReleased(l.rdb.Del(ctx, l.key))
}

var _ PipelineReleaser = (*expiryLock)(nil)

// ReleaseIn is rung 7's (and 8's) Release in p: it asks the clock as
// Release does, now, and queues the DEL behind the business's last write.
func (l *expiryLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	if l.clock().UnixMilli() >= l.expiry {
		return func() error { return ErrNotHeld }
	}
	cmd := p.Del(ctx, l.key)
	return func() error { return delReleased(cmd) }
}
