package lock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/redis/go-redis/v9"
)

// Masters for the Redlock tests (redistest.StartMasters): dead and hung
// addresses, and how many of them hold a key.

// cmdables lists clients as the masters NewRedlock takes.
func cmdables[C redis.Cmdable](cs []C) []redis.Cmdable {
	out := make([]redis.Cmdable, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var blackHole = locktest.BlackHole

// keysOn counts the masters that hold key.
func keysOn(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	n := 0
	for _, m := range masters {
		n += int(m.Exists(context.Background(), key).Val())
	}
	return n
}

// keysOnSoon is keysOn once the releases a Release did not wait for (it
// returns when a majority has released) have landed: within a second.
func keysOnSoon(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	deadline := time.Now().Add(releaseGrace)
	for {
		n := keysOn(t, masters, key)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// releaseGrace is how long a test waits for a release still on its way
// to the masters that did not make the quorum: longer than the node
// timeout it runs under (redlockOpts: TTL/10), so that only a release
// that never comes fails the test, not a loaded machine (CI saw a fourth
// live master answer after the first second).
const releaseGrace = 3 * time.Second

// redlockOpts: a TTL long enough that its default node timeout (TTL/10)
// absorbs a loaded machine, so that only tests about timeouts see them.
var redlockOpts = lock.Options{TTL: 5 * time.Second, Wait: 100 * time.Millisecond, Retry: lock.FixedSleep(5 * time.Millisecond)}
