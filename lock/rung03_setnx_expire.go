package lock

import (
	"context"
	"time"

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
	rdb redis.Cmdable
	ttl time.Duration
}

// NewSetNXExpire returns the SETNX-then-EXPIRE lock, waiting as o says.
func NewSetNXExpire(rdb redis.Cmdable, o Options) Locker {
	return Poll(SetNXExpire{rdb: rdb, ttl: o.WithDefaults().TTL}, o)
}

// Try takes key with SETNX key 1 if it is free, then gives it its TTL. The
// fault point fault.BeforeExpire lies between the two.
func (l SetNXExpire) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SETNX", key)
	}
	fault.Inject(ctx, fault.BeforeExpire)
	// The key is ours: finish the acquisition even if the caller gave up
	// meanwhile, so that only a real crash here leaves a key without a
	// TTL, as in the articles, and not a cancelled request.
	ok, err = l.rdb.PExpire(context.WithoutCancel(ctx), key, c.TTL(l.ttl)).Result()
	if err != nil || !ok {
		// false: the key vanished between the two commands (someone
		// deleted it). We do not hold it; try again.
		return nil, false, wrap(err, "EXPIRE", key)
	}
	return &delLock{rdb: l.rdb, key: key}, true, nil
}
