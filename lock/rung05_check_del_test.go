package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

func TestCheckDelLateReleaseLeavesNextHolderAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast
	opts.TTL = 50 * time.Millisecond
	opts.Wait = 2 * time.Second
	l := lock.NewCheckDel(rdb, opts)

	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("B after A's lease lapsed: %v", err)
	}
	token := rdb.Get(ctx, "lock:k").Val()
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's late release: got %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, "lock:k").Val(); got != token {
		t.Fatalf("A's late release changed B's lock: %q, want %q", got, token)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCheckDelPauseBeforeDeleteFreesNextHolder is rung 5's flaw: A's GET
// matches, A pauses past its lease, B takes the lock meanwhile, and A's DEL
// deletes B's lock.
func TestCheckDelPauseBeforeDeleteFreesNextHolder(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast
	opts.TTL = 50 * time.Millisecond
	opts.Wait = 2 * time.Second
	l := lock.NewCheckDel(rdb, opts)

	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	var b lock.Lock
	var bToken string
	pause := fault.With(ctx, func(_ context.Context, p fault.Point) {
		if p != fault.BeforeDelete {
			return
		}
		// A is paused here; B waits until A's lease lapses and takes it.
		var err error
		if b, err = l.Obtain(context.Background(), "lock:k", lock.Call{}); err != nil {
			t.Errorf("B during A's pause: %v", err)
			return
		}
		bToken = rdb.Get(ctx, "lock:k").Val()
	})
	if err := a.Release(pause); err != nil {
		t.Fatalf("A's release: %v (its GET matched, so it should believe it held the lock)", err)
	}
	if b == nil {
		t.Fatal("B never got the lock")
	}
	if bToken == "" {
		t.Fatal("B's token not read")
	}
	if n := rdb.Exists(ctx, "lock:k").Val(); n != 0 {
		t.Fatal("A's DEL left B's lock: the flaw did not show")
	}
	quick := opts
	quick.Wait = 100 * time.Millisecond
	c, err := lock.NewCheckDel(rdb, quick).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("C while B holds: %v (want it to get in: two holders)", err)
	}
	// B and C both hold the lock; B's release now finds C's token.
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("B's release: got %v, want ErrNotHeld", err)
	}
	c.Release(ctx)
}

// skewClock is an injectable Options.Clock: real time shifted by an offset the
// test moves.
