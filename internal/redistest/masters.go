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
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
