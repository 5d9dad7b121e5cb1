package redistest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// StartMasters starts n independent Redis masters, as Redlock's are
// (redis-server, or the embedded stand-in where it is missing outside
// CI), stopped when the test ends, and returns a client to each
// (MasterClient) and the servers, for tests that stop or hang some.
func StartMasters(t testing.TB, n int) ([]*redis.Client, []*redisfam.Server) {
	t.Helper()
	servers := make([]*redisfam.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			servers[i], errs[i] = redisfam.Start(ctx, "127.0.0.1:0", proc.Auto, CI(), nil)
		})
	}
	wg.Wait()
	clients := make([]*redis.Client, n)
	for i, srv := range servers {
		if errs[i] != nil {
			t.Fatalf("start master %d: %v", i, errs[i])
		}
		t.Cleanup(func() {
			if err := srv.Stop(); err != nil {
				t.Errorf("stop master %d: %v", i, err)
			}
		})
		clients[i] = MasterClient(t, srv.Addr())
	}
	if servers[0].Embedded() {
		t.Logf("redis-server not on PATH: masters are embedded miniredis")
	}
	return clients, servers
}

// MasterClient is a client to the master at addr, closed when the test
// ends. It never retries and dials once: a dead master fails at once.
func MasterClient(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, PoolSize: 64, PoolTimeout: PoolTimeout})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Cmdables lists clients as the masters lock.NewRedlock takes.
func Cmdables[C redis.Cmdable](cs []C) []redis.Cmdable {
	out := make([]redis.Cmdable, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// KeysOn counts the masters that hold key.
func KeysOn(masters []*redis.Client, key string) int {
	n := 0
	for _, m := range masters {
		n += int(m.Exists(context.Background(), key).Val())
	}
	return n
}

// ReleaseGrace is how long a test waits for a release still on its way
// to the masters that were not in the majority a Release waited for.
const ReleaseGrace = 3 * time.Second

// KeysOnSoon is KeysOn once the releases a Release did not wait for (it
// returns when a majority has released) have landed, within ReleaseGrace.
func KeysOnSoon(masters []*redis.Client, key string) int {
	deadline := time.Now().Add(ReleaseGrace)
	for {
		n := KeysOn(masters, key)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}
