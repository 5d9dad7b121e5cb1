// Package checklock is a service's own Redis lock, as an engineer writes
// it around go-redis, and the business it guards: moving money between
// two accounts, two keys. checklock_test.go checks both with lockcheck:
// Lease, the lock most services write, lets a transfer that outlives its
// lease run beside the next one, and money appears; Fenced, the same
// lease with a fencing token each write carries, keeps the books.
package checklock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBusy is what Lock returns when another holder has the lock.
var ErrBusy = errors.New("checklock: busy")

// ErrLapsed is what Unlock returns when the lease had run out.
var ErrLapsed = errors.New("checklock: lease lapsed")

// Lease is SET key token NX PX lease, retried every 10 ms until wait
// runs out, released by a script that deletes the key only while it
// still holds the token. It is mutually exclusive only while every
// section fits its lease.
type Lease struct {
	RDB  redis.UniversalClient
	TTL  time.Duration
	Wait time.Duration
}

// Held is a lock Lease or Fenced holds.
type Held struct {
	rdb        redis.UniversalClient
	key, token string
	fence      int64
}

var unlock = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// Lock takes key, trying every 10 ms for up to Wait: ErrBusy after.
func (l *Lease) Lock(ctx context.Context, key string) (*Held, error) {
	token := newToken()
	return retry(ctx, l.Wait, func() (*Held, bool, error) {
		ok, err := l.RDB.SetNX(ctx, key, token, l.TTL).Result()
		return &Held{rdb: l.RDB, key: key, token: token}, ok, err
	})
}

// Unlock deletes the key if it still holds this lock's token.
func (h *Held) Unlock(ctx context.Context) error {
	n, err := unlock.Run(ctx, h.rdb, []string{h.key}, h.token).Int()
	if err == nil && n == 0 {
		return ErrLapsed
	}
	return err
}

// Fence is the fencing token of a lock Fenced took (0 for Lease's).
func (h *Held) Fence() int64 { return h.fence }

// Fenced is Lease plus a fencing token: one script takes the lease and,
// if it did, increments key:fence, whose new value the holder writes
// with.
type Fenced struct {
	RDB  redis.UniversalClient
	TTL  time.Duration
	Wait time.Duration
}

var lockFenced = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end return 0`)

// Lock takes key and its next fencing token.
func (l *Fenced) Lock(ctx context.Context, key string) (*Held, error) {
	token := newToken()
	return retry(ctx, l.Wait, func() (*Held, bool, error) {
		n, err := lockFenced.Run(ctx, l.RDB, []string{key, key + ":fence"}, token, l.TTL.Milliseconds()).Int64()
		return &Held{rdb: l.RDB, key: key, token: token, fence: n}, n > 0, err
	})
}

func retry(ctx context.Context, wait time.Duration, try func() (*Held, bool, error)) (*Held, error) {
	deadline := time.Now().Add(wait)
	for {
		h, ok, err := try()
		switch {
		case err != nil:
			return nil, err
		case ok:
			return h, nil
		case time.Now().After(deadline):
			return nil, ErrBusy
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Transfer moves amount from one account to another under a held lock:
// it reads both balances, then writes both. Without a fence (Fence 0), a
// holder whose lease lapsed writes what it read before the next
// holder's transfer, and money appears. With one, the read and the write
// each carry the token, and a store that has seen a newer one refuses
// them (ErrStale).
func Transfer(ctx context.Context, rdb redis.UniversalClient, h *Held, from, to string, amount int64) error {
	keys := []string{from, to, from + ":fence"}
	var a, b int64
	if h.Fence() > 0 {
		r, err := fencedRead.Run(ctx, rdb, keys, h.Fence()).Int64Slice()
		if err != nil {
			return err
		}
		if r[0] == 0 {
			return ErrStale
		}
		a, b = r[1], r[2]
	} else {
		var err error
		if a, err = rdb.Get(ctx, from).Int64(); err != nil {
			return err
		}
		if b, err = rdb.Get(ctx, to).Int64(); err != nil {
			return err
		}
	}
	if h.Fence() > 0 {
		ok, err := fencedWrite.Run(ctx, rdb, keys, h.Fence(), a-amount, b+amount).Int64()
		if err == nil && ok == 0 {
			err = ErrStale
		}
		return err
	}
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, from, a-amount, 0)
		p.Set(ctx, to, b+amount, 0)
		return nil
	})
	return err
}

// ErrStale is a read or write refused: a newer fencing token was seen.
var ErrStale = errors.New("checklock: a newer fencing token was seen")

var (
	fencedRead = redis.NewScript(`-- Read two balances under a fencing token
local highest = tonumber(redis.call("GET", KEYS[3]) or "0")
if tonumber(ARGV[1]) < highest then return {0, 0, 0} end
redis.call("SET", KEYS[3], ARGV[1])
return {1, tonumber(redis.call("GET", KEYS[1])), tonumber(redis.call("GET", KEYS[2]))}`)
	fencedWrite = redis.NewScript(`-- Write two balances under a fencing token
local highest = tonumber(redis.call("GET", KEYS[3]) or "0")
if tonumber(ARGV[1]) < highest then return 0 end
redis.call("SET", KEYS[3], ARGV[1])
redis.call("SET", KEYS[1], ARGV[2])
redis.call("SET", KEYS[2], ARGV[3])
return 1`)
)
