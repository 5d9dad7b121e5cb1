package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SetNXPX takes the lock and its lease in one command, SET key 1 NX PX ttl,
// closing rung 3's gap: no process can die between the two any more, so
// every lock key expires.
//
// The race it shows: the value is the same "1" for every holder and the
// release is still a plain DEL. When the business outlives the TTL, the
// lock lapses and B enters; A finishes and its DEL frees B's lock; C
// enters while B is still in the business: OVERSOLD. Rung 5 writes a token
// per holder and checks it before the DEL.
type SetNXPX struct {
	rdb  redis.Cmdable
	opts Options
}

var _ Locker = (*SetNXPX)(nil)

// NewSetNXPX returns the atomic-lease, plain-DEL Locker.
func NewSetNXPX(rdb redis.Cmdable, o Options) *SetNXPX {
	return &SetNXPX{rdb: rdb, opts: o.withDefaults()}
}

// Obtain tries SET key 1 NX PX ttl until it wins or the wait ends.
func (l *SetNXPX) Obtain(ctx context.Context, key string) (Lock, error) {
	err := acquire(ctx, l.opts, l.opts.waiter(ctx, key), func(ctx context.Context) (bool, error) {
		ok, err := l.rdb.SetNX(ctx, key, "1", l.opts.TTL).Result()
		if err != nil {
			return false, fmt.Errorf("lock: SET NX PX %s: %w", key, err)
		}
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &delLock{rdb: l.rdb, key: key, channel: l.opts.Notifier.Channel()}, nil
}
