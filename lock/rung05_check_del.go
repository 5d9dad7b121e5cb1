package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
)

// CheckDel writes a random token per holder (SET key <uuid> NX PX ttl) and
// releases only its own lock: GET the key, compare with the token, then
// DEL. That fixes rung 4's common case: a holder whose lease lapsed finds
// someone else's token and leaves that lock alone.
//
// The race it shows: the compare and the delete are two commands. If A is
// paused after its GET matched (a GC pause, a slow network) long enough for
// the lease to lapse and B to take the lock, A's DEL then deletes B's lock,
// and C enters while B still holds it: OVERSOLD. Rung 6 does the compare
// and the delete in one Lua script.
type CheckDel struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewCheckDel returns the token, GET-then-DEL lock, waiting as o says.
func NewCheckDel(rdb redis.Cmdable, o Options) Locker {
	return Poll(CheckDel{rdb: rdb, ttl: o.WithDefaults().TTL}, o)
}

// Try takes key with SET key <fresh token> NX PX ttl if it is free.
func (l CheckDel) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	token := uuid.NewString()
	ok, err := l.rdb.SetNX(ctx, key, token, c.TTL(l.ttl)).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SET NX PX", key)
	}
	return &checkDelLock{rdb: l.rdb, key: key, token: token}, true, nil
}

type checkDelLock struct {
	rdb   redis.Cmdable
	key   string
	token string
}

// Release GETs the key and, if it still holds our token, DELs it: two
// commands, with the fault point fault.BeforeDelete between them.
func (l *checkDelLock) Release(ctx context.Context) error {
	v, err := l.rdb.Get(ctx, l.key).Result()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	if err != nil {
		return fmt.Errorf("lock: GET %s: %w", l.key, err)
	}
	if v != l.token {
		return ErrNotHeld
	}
	fault.Inject(ctx, fault.BeforeDelete)
	n, err := l.rdb.Del(ctx, l.key).Result()
	if err != nil {
		return fmt.Errorf("lock: DEL %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
