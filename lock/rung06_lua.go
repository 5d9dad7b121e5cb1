package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

//go:embed rung06_lua_release.lua
var luaReleaseSrc string

var luaRelease = redis.NewScript(luaReleaseSrc)

// Lua takes the lock as rung 5 does (SET key <token> NX PX ttl) and
// releases it with one Lua script that deletes the key only while it still
// holds this holder's token. The compare and the delete can no longer be
// split, so a late holder cannot delete a lock that has passed to someone
// else: rung 5's race is closed.
//
// What it does not fix: the lease still lapses when the business outlives
// the TTL, and then two holders run at once. Rungs 7 and 8 try expiry
// timestamps instead, which trust clocks; rung 9 renews the lease.
type Lua struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewLua returns the compare-and-delete lock, waiting as o says.
func NewLua(rdb redis.Cmdable, o Options) Locker {
	return Poll(Lua{rdb: rdb, ttl: o.WithDefaults().TTL}, o)
}

// Try takes key with SET key <fresh token> NX PX ttl if it is free.
func (l Lua) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	token := uuid.NewString()
	ok, err := l.rdb.SetNX(ctx, key, token, c.TTL(l.ttl)).Result()
	if err != nil || !ok {
		return nil, false, wrap(err, "SET NX PX", key)
	}
	return &luaLock{rdb: l.rdb, key: key, token: token}, true, nil
}

type luaLock struct {
	rdb   redis.Cmdable
	key   string
	token string
}

// Release deletes the key if it still holds our token, in one script.
func (l *luaLock) Release(ctx context.Context) error {
	n, err := luaRelease.Run(ctx, l.rdb, []string{l.key}, l.token).Int64()
	return releaseResult(l.key, n, err)
}

var _ PipelineReleaser = (*luaLock)(nil)

// ReleaseIn is rung 6's (and 11's) Release in p: the same
// compare-and-delete, behind the business's last write.
func (l *luaLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := luaRelease.Eval(ctx, p, []string{l.key}, l.token)
	return func() error {
		n, err := cmd.Int64()
		return releaseResult(l.key, n, err)
	}
}
