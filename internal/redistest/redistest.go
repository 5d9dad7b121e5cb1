// Package redistest starts a throwaway Redis for a test: a real
// redis-server on a free loopback port, stopped when the test ends.
//
// Where redis-server is not installed it falls back to the embedded
// miniredis and says so in the test log, except under CI=true, where a
// missing redis-server fails the test: CI proves the real thing.
package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// CI reports whether the tests run in CI, where every real dependency is
// required (need.CI).
func CI() bool { return need.CI() }

// Start returns a client to a fresh Redis and its address.
func Start(t testing.TB) (*redis.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := redisfam.Start(ctx, "127.0.0.1:0", proc.Auto, CI(), nil)
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("stop redis: %v", err)
		}
	})
	if r.Embedded() {
		t.Logf("redis-server not on PATH: using embedded miniredis at %s", r.Addr())
	}
	// A test's hundreds of goroutines queue for the pool's connections:
	// that wait only bounds a hang (the default 4s ran out under -race
	// on the embedded Redis on a loaded machine: "connection pool
	// timeout"), so it is PoolTimeout, a minute.
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, PoolSize: 128, PoolTimeout: PoolTimeout})
	t.Cleanup(func() { rdb.Close() })
	return rdb, r.Addr()
}

// NeedServer returns the path of a server (or browser) the test cannot
// do without. Where it is missing, or hidden by LOCKLADDER_SERVERS=embedded,
// the test is skipped with how to install it; under CI=true it fails.
func NeedServer(t testing.TB, name string) string {
	t.Helper()
	p, err := proc.LookPath(name)
	if err != nil {
		if CI() {
			t.Fatalf("%s; under CI=true the test needs it", proc.Install(name))
		}
		t.Skipf("skipped: %s", proc.Install(name))
	}
	return p
}

// PoolTimeout is how long a test's client waits for a free connection
// of its pool: a bound on a hang, not on the machine's speed.
const PoolTimeout = time.Minute
