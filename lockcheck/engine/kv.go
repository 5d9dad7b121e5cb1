package engine

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// kv reads and resets the server's contents directly, outside the
// schedule: miniredis's own methods, or realKV's on a real redis-server.
type kv interface {
	Keys() []string
	Type(k string) string
	Get(k string) (string, error)
	Exists(k string) bool
	HKeys(k string) ([]string, error)
	HGet(k, f string) string
	List(k string) ([]string, error)
	TTL(k string) time.Duration
	FlushAll()
	Set(k, v string) error
	SetTime(t time.Time)
}

// realKV is kv over a connection of its own to a real redis-server,
// whose clock is the real one (SetTime does nothing).
type realKV struct{ rdb *redis.Client }

var bg = context.Background()

func (r realKV) Keys() []string {
	ks, _ := r.rdb.Keys(bg, "*").Result()
	sort.Strings(ks)
	return ks
}

func (r realKV) Type(k string) string { return r.rdb.Type(bg, k).Val() }

func (r realKV) Get(k string) (string, error) {
	v, err := r.rdb.Get(bg, k).Result()
	if errors.Is(err, redis.Nil) {
		return "", errors.New("no such key")
	}
	return v, err
}

func (r realKV) Exists(k string) bool { return r.rdb.Exists(bg, k).Val() == 1 }

func (r realKV) HKeys(k string) ([]string, error) {
	fs, err := r.rdb.HKeys(bg, k).Result()
	sort.Strings(fs)
	return fs, err
}

func (r realKV) HGet(k, f string) string { return r.rdb.HGet(bg, k, f).Val() }

func (r realKV) List(k string) ([]string, error) { return r.rdb.LRange(bg, k, 0, -1).Result() }

func (r realKV) TTL(k string) time.Duration { return max(r.rdb.PTTL(bg, k).Val(), 0) }

func (r realKV) FlushAll() { r.rdb.FlushAll(bg) }

func (r realKV) FlushDB() { r.rdb.FlushDB(bg) }

func (r realKV) Set(k, v string) error { return r.rdb.Set(bg, k, v, 0).Err() }

func (realKV) SetTime(time.Time) {}
