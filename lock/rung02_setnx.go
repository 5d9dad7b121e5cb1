package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// SetNX is the first Redis lock of the articles (docs/ladder.md, rung 2):
// SETNX key 1, run the business, DEL key. SETNX makes the lock exclusive
// across every instance, which is what rung 1 lacked.
//
// The race it shows: the lock has no lease. A holder that dies between
// SETNX and DEL (a crash, a kill, a lost connection) never releases, and
// every later Obtain waits out its bound, forever: DEADLOCK. Rung 3 gives
// the key a TTL.
type SetNX struct {
	rdb redis.Cmdable
}

// NewSetNX returns the lease-less SETNX lock, waiting as o says.
// Options.TTL does not apply: the key has none.
func NewSetNX(rdb redis.Cmdable, o Options) Locker { return Poll(SetNX{rdb}, o) }

// Try takes key with SETNX key 1 if it is free.
func (l SetNX) Try(ctx context.Context, key string, _ Call) (Lock, bool, error) {
	// A zero expiration makes go-redis send SET key 1 NX: SETNX.
	ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SETNX", key)
	}
	return &delLock{rdb: l.rdb, key: key}, true, nil
}

// delLock releases with a plain DEL, whoever holds the key now. Rungs 2 to
// 4 share it: the value is the same "1" for every holder, so there is
// nothing to compare.
type delLock struct {
	rdb redis.Cmdable
	key string
}

// Release deletes the key. It reports ErrNotHeld only when the key was
// already gone; a key that has passed to another holder is deleted all the
// same, and that is rung 4's flaw.
func (l *delLock) Release(ctx context.Context) error {
	return delReleased(l.rdb.Del(ctx, l.key))
}

var _ PipelineReleaser = (*delLock)(nil)

// ReleaseIn is rungs 2-4's Release in p: the same DEL, behind the
// business's last write, one round trip for both.
func (l *delLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := p.Del(ctx, l.key)
	return func() error { return delReleased(cmd) }
}

// delReleased reads a release's DEL: ErrNotHeld when the key was gone.
func delReleased(cmd *redis.IntCmd) error {
	n, err := cmd.Result()
	if err != nil {
		return fmt.Errorf("lock: DEL %s: %w", cmd.Args()[1], err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
