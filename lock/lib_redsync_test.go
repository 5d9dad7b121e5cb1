package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

func TestLibRedsyncBasics(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := lock.Options{TTL: 5 * time.Second, Wait: 20 * time.Second}
	servers := []redis.UniversalClient{rdb}
	libBasics(t, rdb, lock.NewRedsync(servers, o), lock.NewRedsync(servers, o), "redsync", 4, 10)
}

// TestLibRedsyncUnlockAfterExpiry: nothing renews redsync's lease. A
// business past it lets B in while A still believes it holds the lock,
// and A's Unlock then fails: ErrTaken while B holds it,
// ErrLockAlreadyExpired when nobody took it. Both are ErrNotHeld here.
func TestLibRedsyncUnlockAfterExpiry(t *testing.T) {
	rdb, _ := redistest.Start(t)
	rs := lock.NewRedsync([]redis.UniversalClient{rdb}, lock.Options{TTL: 100 * time.Millisecond, Wait: time.Second})
	ctx := context.Background()

	a, err := rs.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // A's business outlives its lease
	b, err := rs.Obtain(ctx, "lock:k", lock.Call{Try: dur(0), Lease: 5 * time.Second})
	if err != nil {
		t.Fatalf("B, once A's lease lapsed: %v: want the lock, while A still holds it", err)
	}
	var taken *redsync.ErrTaken
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) || !errors.As(err, &taken) {
		t.Fatalf("A's Unlock while B holds: %v, want ErrNotHeld wrapping redsync's ErrTaken", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B's Unlock: %v (A's failed Unlock must not free B's lock)", err)
	}

	c, err := rs.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // lapsed, and nobody took it
	if err := c.Release(ctx); !errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Fatalf("Unlock after the lease lapsed: %v, want ErrNotHeld wrapping ErrLockAlreadyExpired", err)
	}
}

// libMasters starts n independent Redis servers and returns go-redis
// clients to them.
func libMasters(t *testing.T, n int) ([]redis.UniversalClient, []*stack.Redis) {
	t.Helper()
	servers := make([]*stack.Redis, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			servers[i], errs[i] = stack.StartRedis(ctx, "127.0.0.1:0", stack.Auto, redistest.CI(), nil)
		})
	}
	wg.Wait()
	clients := make([]redis.UniversalClient, n)
	for i, srv := range servers {
		if errs[i] != nil {
			t.Fatalf("start master %d: %v", i, errs[i])
		}
		t.Cleanup(func() { srv.Stop() })
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, PoolSize: 64})
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	return clients, servers
}

func TestLibRedsyncRedlockBasics(t *testing.T) {
	counter, _ := redistest.Start(t)
	masters, _ := libMasters(t, 5)
	o := lock.Options{TTL: 5 * time.Second, Wait: 20 * time.Second}
	libBasics(t, counter, lock.NewRedsync(masters, o), lock.NewRedsync(masters, o), "redsync-redlock", 4, 10)
}

// TestLibRedsyncRedlockMajority: over five masters the lock survives two
// lost (a majority is left), and is granted twice when three forget it
// while A holds it (article 002: a majority restarted empty, here
// emptied with FLUSHALL).
func TestLibRedsyncRedlockMajority(t *testing.T) {
	masters, servers := libMasters(t, 5)
	rs := lock.NewRedsync(masters, lock.Options{TTL: 5 * time.Second, Wait: time.Second})
	ctx := context.Background()

	for _, s := range servers[:2] {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	a, err := rs.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("with 2 of 5 masters down: %v", err)
	}
	if _, err := rs.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("try=0 while A holds on 3 of 5: %v, want ErrBusy", err)
	}
	// Three of the live masters forget: B wins them, and A still holds.
	for _, m := range masters[2:] {
		if err := m.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := rs.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)})
	if err != nil {
		t.Fatalf("B after 3 masters forgot A's lock: %v, want it granted again", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("A's Unlock after B took its masters: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("B's Unlock: %v", err)
	}
}
