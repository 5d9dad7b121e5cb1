package libs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
)

func TestLibRedislockBasics(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := lock.Options{TTL: 5 * time.Second, Wait: 20 * time.Second}
	libBasics(t, rdb, libs.NewRedislock(rdb, o), libs.NewRedislock(rdb, o), "redislock", 10, 20)
	t.Run("refresh", func(t *testing.T) {
		libBasics(t, rdb, libs.NewRedislockRefresh(rdb, o), libs.NewRedislockRefresh(rdb, o), "redislock-refresh", 10, 20)
	})
}

// TestLibRedislockReleaseAfterExpiry: nothing renews redislock's lease. A
// business past it lets B in while A still writes, and A learns it only
// from Release: redislock.ErrLockNotHeld.
func TestLibRedislockReleaseAfterExpiry(t *testing.T) {
	rdb, _ := redistest.Start(t)
	l := libs.NewRedislock(rdb, lock.Options{TTL: 100 * time.Millisecond, Wait: time.Second})
	ctx := context.Background()
	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	b, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(0), Lease: 5 * time.Second})
	if err != nil {
		t.Fatalf("B, once A's lease lapsed: %v: want the lock, while A still holds it", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) || !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("A's Release: %v, want ErrNotHeld wrapping redislock.ErrLockNotHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B's Release: %v", err)
	}
}

// TestLibRedislockRefreshKeepsASlowHolder: with Refresh every lease/3, a
// business of three leases keeps the lock: nobody else gets in, and the
// release succeeds. After the release the loop refreshes nothing more.
func TestLibRedislockRefreshKeepsASlowHolder(t *testing.T) {
	rdb, _ := redistest.Start(t)
	// The refresh runs every third of a lease on the wall clock: a lease
	// of 150ms lapsed once when, at a load average of 27 on two cores,
	// the refreshing goroutine waited that long for a core.
	const lease = time.Second
	l := libs.NewRedislockRefresh(rdb, lock.Options{TTL: lease, Wait: time.Second})
	ctx := context.Background()
	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		if b, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)}); err == nil {
			b.Release(ctx)
			t.Fatal("another caller got the lock while the refreshed holder's business ran")
		} else if !errors.Is(err, lock.ErrBusy) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release after three leases, refreshed: %v", err)
	}
	if n, err := rdb.Exists(ctx, "lock:k").Result(); err != nil || n != 0 {
		t.Fatalf("the lock key after release: %d, %v", n, err)
	}
	time.Sleep(lease) // a loop still running would bring nothing back, but must not panic or leak
}
