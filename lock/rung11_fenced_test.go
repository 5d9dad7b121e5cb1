package lock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

func TestFencedTokensIncrease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	o := safeOpts
	o.TTL = 5 * time.Second // outlives the other process's wait
	procs := []lock.Locker{lock.NewFenced(rdb, o), lock.NewFenced(rdb, o)}
	var last int64
	for i := range 6 {
		l, err := procs[i%2].Obtain(ctx, key, lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		tok := l.(lock.Tokened).Token()
		if tok <= last {
			t.Fatalf("acquisition %d: token %d after %d, want strictly larger", i, tok, last)
		}
		last = tok
		if _, err := procs[(i+1)%2].Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("the other process while held: %v, want ErrNotObtained", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("second Release: %v, want ErrNotHeld", err)
		}
	}
	if got := rdb.Get(ctx, lock.FenceKey(key)).Val(); got != strconv.FormatInt(last, 10) {
		t.Fatalf("%s = %q, want the last token %d", lock.FenceKey(key), got, last)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key left after the last release")
	}
}

// TestFencedStaleHolderIsRefused is rung 11's fix: A pauses past its
// lease, B takes the lock with a larger token and sells; when A wakes up
// and sells with its old token, the inventory refuses it. Two holders, but
// one sale.
func TestFencedStaleHolderIsRefused(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	store := inventory.New(rdb)
	if err := store.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	// A's lease is short, to lapse while A is paused; B's is long, so
	// that B's sale and release come within it however loaded the
	// machine. B's wait only bounds a hang: B entering at all, with A's
	// lease lapsed, is the point.
	a, err := lock.NewFenced(rdb, safeOpts).Obtain(ctx, inventory.StockLock, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	// A is paused here; B waits until A's lease lapses and takes it.
	ob := holdOpts
	ob.Wait = time.Minute
	b, err := lock.NewFenced(rdb, ob).Obtain(ctx, inventory.StockLock, lock.Call{})
	if err != nil {
		t.Fatalf("B after A's lease lapsed: %v", err)
	}
	ta, tb := a.(lock.Tokened).Token(), b.(lock.Tokened).Token()
	if tb <= ta {
		t.Fatalf("B's token %d is not larger than A's %d", tb, ta)
	}
	if n, err := store.Sell(ctx, inventory.Guard{Token: tb}); err != nil || n != 9 {
		t.Fatalf("B's sale: %d, %v", n, err)
	}
	if _, err := store.Sell(ctx, inventory.Guard{Token: ta}); !errors.Is(err, inventory.ErrStaleToken) {
		t.Fatalf("A's sale after waking up: %v, want ErrStaleToken", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's late release: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B's release: %v", err)
	}
	if snap, _ := store.Snapshot(ctx); snap.Stock != 9 || snap.Sold != 1 {
		t.Fatalf("snapshot %+v, want stock 9, sold 1", snap)
	}
}
