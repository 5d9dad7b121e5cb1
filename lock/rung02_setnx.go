package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SetNX is the first Redis lock of the articles: SETNX key 1, run the
// business, DEL key. SETNX makes the lock exclusive across every instance,
// which is what rung 1 lacked.
//
// The race it shows: the lock has no lease. A holder that dies between
// SETNX and DEL (a crash, a kill, a lost connection) never releases, and
// every later Obtain waits out its bound, forever: DEADLOCK. Rung 3 gives
// the key a TTL.
type SetNX struct {
	rdb  redis.Cmdable
	opts Options
}

var _ Locker = (*SetNX)(nil)

// NewSetNX returns the lease-less SETNX Locker. Options.TTL does not apply:
// the key has none.
func NewSetNX(rdb redis.Cmdable, o Options) *SetNX {
	return &SetNX{rdb: rdb, opts: o.withDefaults()}
}

// Obtain tries SETNX key 1 until it wins or the wait ends.
func (l *SetNX) Obtain(ctx context.Context, key string) (Lock, error) {
	err := acquire(ctx, l.opts, l.opts.waiter(ctx, key), func(ctx context.Context) (bool, error) {
		// A zero expiration makes go-redis send SET key 1 NX: SETNX.
		ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
		if err != nil {
			return false, fmt.Errorf("lock: SETNX %s: %w", key, err)
		}
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &delLock{rdb: l.rdb, key: key, channel: l.opts.Notifier.Channel()}, nil
}

// delLock releases with a plain DEL, whoever holds the key now. Rungs 2 to
// 4 share it: the value is the same "1" for every holder, so there is
// nothing to compare.
type delLock struct {
	rdb     redis.Cmdable
	key     string
	channel string // where the release is announced ("" for nowhere)
}

// Release deletes the key. It reports ErrNotHeld only when the key was
// already gone; a key that has passed to another holder is deleted all the
// same, and that is rung 4's flaw.
func (l *delLock) Release(ctx context.Context) error {
	n, err := del(ctx, l.rdb, l.key, l.channel)
	if err != nil {
		return fmt.Errorf("lock: DEL %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// del is DEL key, and with a channel the announcement of the release for
// WaitNotify waiters, pipelined: still one round trip. The DEL is the
// rung's; the announcement changes nothing about who holds the lock.
func del(ctx context.Context, rdb redis.Cmdable, key, channel string) (int64, error) {
	if channel == "" {
		return rdb.Del(ctx, key).Result()
	}
	var n *redis.IntCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Del(ctx, key)
		p.Publish(ctx, channel, msgReleased+key)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n.Val(), nil
}
