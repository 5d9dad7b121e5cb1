package lock

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

//go:embed rung06_lua_release.lua
var luaReleaseSrc string

var luaRelease = redis.NewScript(luaReleaseSrc)

// Lua sets the lock atomically with its lease (SET key token NX PX ttl) and
// releases it with one Lua script that deletes the key only while it still
// holds this holder's random token. That closes the two holes below it: a
// crashed holder's lock expires, and a late holder can no longer delete a
// lock that has passed to someone else, because the compare and the delete
// cannot be split.
//
// What it does not fix: the lease still lapses when the business outlives
// the TTL, and then two holders run at once.
type Lua struct {
	rdb  redis.Cmdable
	opts Options
}

var _ Locker = (*Lua)(nil)

// NewLua returns the compare-and-delete Locker.
func NewLua(rdb redis.Cmdable, o Options) *Lua {
	return &Lua{rdb: rdb, opts: o.withDefaults()}
}

// Obtain tries SET NX PX with a fresh token until it wins or the wait ends.
func (l *Lua) Obtain(ctx context.Context, key string) (Lock, error) {
	token, err := obtainToken(ctx, l.rdb, l.opts, key) // as rung 5
	if err != nil {
		return nil, err
	}
	return &luaLock{rdb: l.rdb, key: key, token: token, channel: l.opts.Notifier.Channel()}, nil
}

type luaLock struct {
	rdb     redis.Cmdable
	key     string
	token   string
	channel string // where the release is announced ("" for nowhere)
}

var _ PipelineReleaser = (*luaLock)(nil)

func (l *luaLock) Release(ctx context.Context) error {
	n, err := luaRelease.Run(ctx, l.rdb, []string{l.key}, l.token, l.channel).Int64()
	return releaseResult(l.key, n, err)
}

// ReleaseIn queues the same compare-and-delete in p, behind the business's
// last write: one round trip for both.
func (l *luaLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	cmd := luaRelease.Eval(ctx, p, []string{l.key}, l.token, l.channel)
	return func() error {
		n, err := cmd.Int64()
		return releaseResult(l.key, n, err)
	}
}
