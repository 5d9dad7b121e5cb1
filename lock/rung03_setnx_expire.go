package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// SetNXExpire adds the lease rung 2 lacked, as the articles first do: SETNX
// key 1, then a separate EXPIRE key ttl. A holder that dies after both
// commands no longer blocks everyone forever: its key expires.
//
// The race it shows: the two commands are not atomic. A process that dies
// between SETNX and EXPIRE leaves a key with no TTL, and that is rung 2's
// DEADLOCK again. Rung 4 sets the value and the lease in one command.
//
// go-redis's SetNX with a TTL already sends the atomic SET NX PX, so this
// rung calls SetNX with no TTL and then PEXPIRE (EXPIRE in milliseconds)
// itself. Release is rung 2's plain DEL.
type SetNXExpire struct {
	rdb  redis.Cmdable
	opts Options
}

var _ Locker = (*SetNXExpire)(nil)

// NewSetNXExpire returns the SETNX-then-EXPIRE Locker.
func NewSetNXExpire(rdb redis.Cmdable, o Options) *SetNXExpire {
	return &SetNXExpire{rdb: rdb, opts: o.withDefaults()}
}

// Obtain tries SETNX key 1 until it wins or the wait ends, then gives the
// key its TTL. The fault point fault.BeforeExpire lies between the two.
func (l *SetNXExpire) Obtain(ctx context.Context, key string) (Lock, error) {
	err := acquire(ctx, l.opts, l.opts.waiter(ctx, key), func(ctx context.Context) (bool, error) {
		ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
		if err != nil {
			return false, fmt.Errorf("lock: SETNX %s: %w", key, err)
		}
		if !ok {
			return false, nil
		}
		fault.Inject(ctx, fault.BeforeExpire)
		// The key is ours: finish the acquisition even if the caller gave
		// up meanwhile, so that only a real crash here leaves a key
		// without a TTL, as in the articles, and not a cancelled request.
		ok, err = l.rdb.PExpire(context.WithoutCancel(ctx), key, l.opts.TTL).Result()
		if err != nil {
			return false, fmt.Errorf("lock: EXPIRE %s: %w", key, err)
		}
		// false: the key vanished between the two commands (someone
		// deleted it). We do not hold it; try again.
		return ok, nil
	})
	if err != nil {
		return nil, err
	}
	return &delLock{rdb: l.rdb, key: key, channel: l.opts.Notifier.Channel()}, nil
}
