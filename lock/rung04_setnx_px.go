package lock

import (
	"context"
	"time"

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
//
// (go-redis sends a TTL in whole seconds as EX, the default 2s as SET key
// 1 NX EX 2; PX only for a TTL that is not whole seconds. The same lease.)
type SetNXPX struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewSetNXPX returns the atomic-lease, plain-DEL lock, waiting as o says.
func NewSetNXPX(rdb redis.Cmdable, o Options) Locker {
	return Poll(SetNXPX{rdb: rdb, ttl: o.WithDefaults().TTL}, o)
}

// Try takes key with SET key 1 NX PX ttl if it is free.
func (l SetNXPX) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	ok, err := l.rdb.SetNX(ctx, key, "1", c.TTL(l.ttl)).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SET NX PX", key)
	}
	return &delLock{rdb: l.rdb, key: key}, true, nil
}
