package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

//go:embed rung11_fenced_acquire.lua
var luaFencedAcquireSrc string

var luaFencedAcquire = redis.NewScript(luaFencedAcquireSrc)

// Tokened is a held lock that carries a fencing token.
type Tokened interface {
	// Token is the fencing token: every acquisition of the lock gets a
	// larger one than the acquisition before it.
	Token() int64
}

// Fenced is rung 6's lease (SET key owner NX PX ttl, compare-and-delete
// release) plus a fencing token: the same script that takes the lease also
// INCRs a counter kept beside the lock (<key>:fence) and returns it, so
// every holder gets a token larger than any holder before it. The holder
// passes its token with every write, and the storage refuses a token lower
// than the highest it has seen (inventory.Store.Sell with a Guard.Token).
//
// The race it fixes is the one no lease can: a holder paused past its
// lease (GC, SIGSTOP), or whose business outlives the TTL, wakes up still
// believing it holds the lock while the next holder works. Its token is
// now lower than the next holder's, so the storage turns its writes away
// instead of letting them land: the lease may lapse, the data stays right.
//
// What it still shows: nothing, under these scenarios. The cost is that
// the storage must check the tokens (here, Lua scripts around the stock),
// and that a stale holder's work is refused rather than done.
type Fenced struct {
	rdb redis.Cmdable
	ttl time.Duration
}

// NewFenced returns the lease-plus-fencing-token lock, waiting as o says.
func NewFenced(rdb redis.Cmdable, o Options) Locker {
	return Poll(Fenced{rdb: rdb, ttl: o.WithDefaults().TTL}, o)
}

// FenceKey is the counter that hands out key's fencing tokens.
func FenceKey(key string) string { return key + ":fence" }

// Try takes the lease and the next fencing token in one script, if the
// lock is free. The Lock it returns is also Tokened.
func (l Fenced) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	owner := uuid.NewString()
	fence, err := luaFencedAcquire.Run(ctx, l.rdb, []string{key, FenceKey(key)}, owner, leaseMS(c.TTL(l.ttl))).Int64()
	if err != nil || fence == 0 {
		return nil, false, wrap(err, "fenced acquire", key)
	}
	return &fencedLock{luaLock: luaLock{rdb: l.rdb, key: key, token: owner}, fence: fence}, true, nil
}

// fencedLock releases as rung 6 does, by its owner token, and carries the
// fencing token besides.
type fencedLock struct {
	luaLock
	fence int64
}

var (
	_ Tokened          = (*fencedLock)(nil)
	_ PipelineReleaser = (*fencedLock)(nil)
)

func (l *fencedLock) Token() int64 { return l.fence }
