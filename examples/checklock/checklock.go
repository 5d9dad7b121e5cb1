// Package checklock is a service's own Redis locks, as an engineer
// writes them around go-redis, and (in checklock_test.go) the test that
// checks them with the lab's explorer (explore.Check): Lease, the lock
// most services write, is found broken, with the schedule that breaks
// it; Fenced, the same lease with a fencing token the write checks,
// passes, and the test's log says what was searched.
package checklock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBusy is what Obtain returns when another holder has the lock.
var ErrBusy = errors.New("checklock: busy")

// ErrLapsed is what Release returns when the lease had run out.
var ErrLapsed = errors.New("checklock: lease lapsed")

// Lease is SET key token NX PX lease, released by a script that deletes
// the key only while it still holds the token. It is mutually exclusive
// only while every section fits its lease: a section that outlives it
// (a slow call, a pause) lets the next holder in while it still writes.
type Lease struct {
	RDB redis.UniversalClient
	TTL time.Duration
}

// Held is a lock Lease or Fenced holds.
type Held struct {
	rdb        redis.UniversalClient
	key, token string
	fence      int64
}

var release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// Obtain makes one attempt to take key: ErrBusy when it is held.
func (l *Lease) Obtain(ctx context.Context, key string) (*Held, error) {
	token := newToken()
	ok, err := l.RDB.SetNX(ctx, key, token, l.TTL).Result()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrBusy
	}
	return &Held{rdb: l.RDB, key: key, token: token}, nil
}

// Release deletes the key if it still holds this lock's token.
func (h *Held) Release(ctx context.Context) error {
	n, err := release.Run(ctx, h.rdb, []string{h.key}, h.token).Int()
	if err == nil && n == 0 {
		return ErrLapsed
	}
	return err
}

// Token is the fencing token of a lock Fenced took (0 for Lease's): the
// storage refuses a write with a token smaller than one it has seen.
func (h *Held) Token() int64 { return h.fence }

// Fenced is Lease plus a fencing token: one script takes the lease and,
// if it did, increments the lock's counter (key:fence), whose new value
// the holder writes with.
type Fenced struct {
	RDB redis.UniversalClient
	TTL time.Duration
}

var obtainFenced = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end return 0`)

// Obtain makes one attempt to take key and its next fencing token.
func (l *Fenced) Obtain(ctx context.Context, key string) (*Held, error) {
	token := newToken()
	n, err := obtainFenced.Run(ctx, l.RDB, []string{key, key + ":fence"}, token, l.TTL.Milliseconds()).Int64()
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, ErrBusy
	}
	return &Held{rdb: l.RDB, key: key, token: token, fence: n}, nil
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
