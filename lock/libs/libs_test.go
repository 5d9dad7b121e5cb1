package libs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
)

// libBasics checks what every library rung must do as a rung: exclude
// under contention from two lockers (two processes), refuse at once with
// try=0 while the lock is held, give up at a 100ms bound, release, and
// say ErrNotHeld to a second release.
func libBasics(t *testing.T, rdb *redis.Client, a, b lock.Locker, key string, workers, each int) {
	t.Helper()
	contend(t, rdb, locktest.Alternate{a, b}, lock.Call{}, "n:"+key, workers, each)

	ctx := context.Background()
	held, err := a.Obtain(ctx, "lock:"+key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	// Every caller's Lockers wait 20s: giving up sooner is the call's bound.
	locktest.Refuses(t, b, "lock:"+key, 100*time.Millisecond, 20*time.Second)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a second release: %v, want ErrNotHeld", err)
	}
	// Within a second, not at once: zk-lock's given-up waiter above may
	// still be in line, to take the lock and give it back.
	again, err := b.Obtain(ctx, "lock:"+key, lock.Call{Try: dur(time.Second)})
	if err != nil {
		t.Fatalf("once released: %v", err)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

var contend = locktest.Contend

func dur(d time.Duration) *time.Duration { return &d }
