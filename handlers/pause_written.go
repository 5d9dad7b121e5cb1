package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// A pause staged to show a lease that lapses (fault=pause) shows it only
// when, while the holder is frozen, its lease lapses and another request
// takes the lock and writes. Left to a fixed time, that was the others'
// luck: whether one of them was waiting outside the frozen instance and
// got the lock and wrote within the pause, on two loaded cores.
// until=written makes it the resumer's condition: it reads a counter of the
// item that every write moves (sold for /sale, num for /testLock) once
// the process is stopped, and sends SIGCONT only once it has moved.

// Written is what a pause with until=written watches: the instance's main
// Redis (as the app connects to it) and the item's counter.
type Written struct {
	Addrs    []string `json:"addrs"`
	Cluster  bool     `json:"cluster,omitempty"`
	Username string   `json:"username,omitempty"`
	Password string   `json:"password,omitempty"`
	DB       int      `json:"db,omitempty"`
	Key      string   `json:"key"`
}

// writtenOf returns how to watch key on c, the app's main Redis client;
// false when c is not one it knows how to reach again from another
// process.
func writtenOf(c redis.Cmdable, key string) (Written, bool) {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return Written{Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password, DB: o.DB, Key: key}, true
	case *redis.ClusterClient:
		o := c.Options()
		return Written{Addrs: o.Addrs, Cluster: true, Username: o.Username, Password: o.Password, Key: key}, true
	}
	return Written{}, false
}

// encode is w for the resumer's environment.
func (w Written) encode() string {
	b, _ := json.Marshal(w)
	return string(b)
}

func decodeWritten(s string) (Written, error) {
	var w Written
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return Written{}, err
	}
	if len(w.Addrs) == 0 || w.Key == "" {
		return Written{}, errors.New("no address or no key")
	}
	return w, nil
}

// watcher connects to w's Redis and returns moved, which reports whether
// the counter differs from what it read first. A counter it cannot read
// never counts as moved: the pause then ends at its bound.
func (w Written) watcher() (moved func() bool) {
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: w.Addrs, IsClusterMode: w.Cluster, Username: w.Username, Password: w.Password, DB: w.DB,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: 1, MaxRetries: -1,
	})
	read := func() (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := c.Get(ctx, w.Key).Result()
		if errors.Is(err, redis.Nil) {
			return "", true
		}
		return v, err == nil
	}
	first, ok := read()
	return func() bool {
		if !ok {
			first, ok = read()
			return false
		}
		now, got := read()
		return got && now != first
	}
}

// resumeWhen waits until d has passed since start and moved reports true,
// or until bound has passed since start, polling every tick.
func resumeWhen(start time.Time, d, bound, tick time.Duration, moved func() bool) {
	time.Sleep(time.Until(start.Add(d)))
	for time.Since(start) < bound && !moved() {
		time.Sleep(tick)
	}
}

// takenBy waits, at most bound, until key on rdb holds a token it did not
// hold at the last look: another holder has just taken the lock (a
// check-pause with until=taken). A key it cannot read is no token.
func takenBy(ctx context.Context, rdb redis.Cmdable, key string, bound time.Duration) {
	look := func() string {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		v, _ := rdb.Get(ctx, key).Result()
		return v
	}
	last := look()
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(time.Millisecond) {
		now := look()
		if now != "" && now != last {
			return
		}
		last = now
	}
}
