package lockcheck_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lockcheck"
)

// Locks as engineers write them over go-redis, each with a blocking
// Obtain that retries every 10 ms (time.Sleep), as most Lock() methods
// do. None is taken from the lab's lock/.

const retry = 10 * time.Millisecond

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// delHeld is released by a plain DEL.
type delHeld struct {
	rdb redis.UniversalClient
	key string
}

func (h delHeld) Release(ctx context.Context) error { return h.rdb.Del(ctx, h.key).Err() }

// setnxExpire: SETNX, then EXPIRE. A holder that dies between the two
// leaves a lock that never expires.
type setnxExpire struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

func (l setnxExpire) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	for {
		ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			if err := l.rdb.Expire(ctx, key, l.ttl).Err(); err != nil {
				return nil, err
			}
			return delHeld{l.rdb, key}, nil
		}
		time.Sleep(retry)
	}
}

// lease: SET NX PX with a token of its own; its release (release) is
// either GET, compare, DEL (checkThenDelete) or one script.
type lease struct {
	rdb redis.UniversalClient
	ttl time.Duration
	// checkThenDelete releases by GET, compare, DEL: three steps that
	// another client's SET can fall between.
	checkThenDelete bool
	// retriedDel releases by DEL, sent again when it fails (a timeout).
	retriedDel bool
	// block retries every 10 ms; else one attempt.
	block bool
}

type leaseHeld struct {
	l          *lease
	key, token string
}

var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

func (l *lease) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	token := newToken()
	for {
		ok, err := l.rdb.SetNX(ctx, key, token, l.ttl).Result()
		switch {
		case err != nil:
			return nil, err
		case ok:
			return &leaseHeld{l, key, token}, nil
		case !l.block:
			return nil, lockcheck.ErrNotObtained
		}
		time.Sleep(retry)
	}
}

func (h *leaseHeld) Release(ctx context.Context) error {
	if h.l.retriedDel {
		// The retried unlock: a DEL whose reply timed out is sent again,
		// though the first may have run, and the lock passed on since.
		var err error
		for range 3 {
			if err = h.l.rdb.Del(ctx, h.key).Err(); err == nil {
				return nil
			}
		}
		return err
	}
	if !h.l.checkThenDelete {
		return releaseScript.Run(ctx, h.l.rdb, []string{h.key}, h.token).Err()
	}
	v, err := h.l.rdb.Get(ctx, h.key).Result()
	if err != nil || v != h.token {
		return err
	}
	return h.l.rdb.Del(ctx, h.key).Err()
}

// breaker is lease with a "stuck-lock breaker": a lock found busy whose
// PTTL is negative (no expiry, it seems) is deleted and taken again. But
// -2 is a key that has gone: by the DEL, another client may hold it.
type breaker struct{ lease }

func (l *breaker) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	token := newToken()
	for {
		ok, err := l.rdb.SetNX(ctx, key, token, l.ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &leaseHeld{&l.lease, key, token}, nil
		}
		ttl, err := l.rdb.PTTL(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		if ttl < 0 {
			if err := l.rdb.Del(ctx, key).Err(); err != nil {
				return nil, err
			}
			continue
		}
		time.Sleep(retry)
	}
}

// stamp writes its expiry, read from time.Now, as the lock's value; a
// lock whose stamp has passed is deleted and taken again.
type stamp struct {
	rdb redis.UniversalClient
	ttl time.Duration
}

func (l stamp) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	for {
		ok, err := l.rdb.SetNX(ctx, key, time.Now().Add(l.ttl).UnixMilli(), 0).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return delHeld{l.rdb, key}, nil
		}
		v, err := l.rdb.Get(ctx, key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		if ms, perr := strconv.ParseInt(v, 10, 64); err == nil && perr == nil && ms < time.Now().UnixMilli() {
			if err := l.rdb.Del(ctx, key).Err(); err != nil {
				return nil, err
			}
			continue
		}
		time.Sleep(retry)
	}
}

// fenced is lease plus a fencing token: one script takes the lease and,
// if it did, increments the lock's counter.
type fenced struct{ lease }

type fencedHeld struct {
	*leaseHeld
	token int64
}

func (h fencedHeld) Token() int64 { return h.token }

var fencedObtain = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end return 0`)

func (l *fenced) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	token := newToken()
	for {
		n, err := fencedObtain.Run(ctx, l.rdb, []string{key, key + ":fence"}, token, l.ttl.Milliseconds()).Int64()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return fencedHeld{&leaseHeld{&l.lease, key, token}, n}, nil
		}
		if !l.block {
			return nil, lockcheck.ErrNotObtained
		}
		time.Sleep(retry)
	}
}

// wrapped is an adapter that wraps fenced's held lock, and so hides its
// Token method.
type wrapped struct{ l *fenced }

type wrappedHeld struct{ h lockcheck.Held }

func (w wrappedHeld) Release(ctx context.Context) error { return w.h.Release(ctx) }

func (w wrapped) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	h, err := w.l.Obtain(ctx, key)
	if err != nil {
		return nil, err
	}
	return wrappedHeld{h}, nil
}

var (
	setnxExpireLock = lockcheck.Lock{Name: "setnx-expire", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return setnxExpire{rdb, env.TTL}
	}}
	checkDelLock = lockcheck.Lock{Name: "check-del", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return &lease{rdb: rdb, ttl: env.TTL, checkThenDelete: true, block: true}
	}}
	luaLock = lockcheck.Lock{Name: "lua", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return &lease{rdb: rdb, ttl: env.TTL, block: true}
	}}
	retriedDelLock = lockcheck.Lock{Name: "retried-del", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return &lease{rdb: rdb, ttl: env.TTL, retriedDel: true, block: true}
	}}
	breakerLock = lockcheck.Lock{Name: "breaker", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return &breaker{lease{rdb: rdb, ttl: env.TTL}}
	}}
	stampLock = lockcheck.Lock{Name: "stamp", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return stamp{rdb, env.TTL}
	}}
	fencedLock = lockcheck.Lock{Name: "fenced", Fenced: true, New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return &fenced{lease{rdb: rdb, ttl: env.TTL, block: true}}
	}}
	wrappedLock = lockcheck.Lock{Name: "fenced-wrapped", Fenced: true, New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return wrapped{&fenced{lease{rdb: rdb, ttl: env.TTL, block: true}}}
	}}
)

// brokenLock's Obtain says busy other than with ErrNotObtained.
var brokenLock = lockcheck.Lock{Name: "broken", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
	return brokenLocker{&lease{rdb: rdb, ttl: env.TTL}}
}}

type brokenLocker struct{ l *lease }

func (b brokenLocker) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	h, err := b.l.Obtain(ctx, key)
	if errors.Is(err, lockcheck.ErrNotObtained) {
		return nil, errors.New("taken")
	}
	return h, err
}

// panicLock's Obtain panics.
var panicLock = lockcheck.Lock{Name: "panics", New: func(redis.UniversalClient, lockcheck.Env) lockcheck.Locker { return panicker{} }}

type panicker struct{}

func (panicker) Obtain(context.Context, string) (lockcheck.Held, error) { panic("boom") }

// inTheBubble is a lease lock that takes no lock at all when its Redis
// is the check's in-process one (its address reads "miniredis"): a lock
// whose code depends on something the check does not drive the same way
// in-process and on a real redis-server.
type inTheBubble struct{ l *lease }

func (b inTheBubble) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	if c, ok := b.l.rdb.(*redis.Client); ok && c.Options().Addr == "miniredis" {
		return delHeld{b.l.rdb, key + ":none"}, nil
	}
	return b.l.Obtain(ctx, key)
}

var inTheBubbleLock = lockcheck.Lock{Name: "bubble-only", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
	return inTheBubble{&lease{rdb: rdb, ttl: env.TTL, block: true}}
}}
