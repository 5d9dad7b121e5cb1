package lock

import (
	"context"
	"errors"
	"fmt"

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
	rdb  redis.Cmdable
	opts Options
}

var _ Locker = (*CheckDel)(nil)

// NewCheckDel returns the token, GET-then-DEL Locker.
func NewCheckDel(rdb redis.Cmdable, o Options) *CheckDel {
	return &CheckDel{rdb: rdb, opts: o.withDefaults()}
}

// Obtain tries SET NX PX with a fresh token until it wins or the wait ends.
func (l *CheckDel) Obtain(ctx context.Context, key string) (Lock, error) {
	token, err := obtainToken(ctx, l.rdb, l.opts, key)
	if err != nil {
		return nil, err
	}
	return &checkDelLock{rdb: l.rdb, key: key, token: token, channel: l.opts.Notifier.Channel()}, nil
}

// obtainToken takes key with SET key <fresh uuid> NX PX ttl, waiting as
// opts say, and returns the token: the owner's proof that rungs 5 and 6
// compare before they delete. The two rungs take the lock alike and differ
// only in how they release it.
func obtainToken(ctx context.Context, rdb redis.Cmdable, opts Options, key string) (string, error) {
	token := uuid.NewString()
	err := acquire(ctx, opts, opts.waiter(ctx, key), func(ctx context.Context) (bool, error) {
		ok, err := rdb.SetNX(ctx, key, token, opts.TTL).Result()
		if err != nil {
			return false, fmt.Errorf("lock: SET NX %s: %w", key, err)
		}
		return ok, nil
	})
	return token, err
}

type checkDelLock struct {
	rdb     redis.Cmdable
	key     string
	token   string
	channel string
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
	n, err := del(ctx, l.rdb, l.key, l.channel)
	if err != nil {
		return fmt.Errorf("lock: DEL %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
