package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

func TestSetNXPXLateDeleteFreesNextHolder(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast
	opts.TTL = 50 * time.Millisecond
	opts.Wait = 2 * time.Second
	l := lock.NewSetNXPX(rdb, opts)

	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Obtain(ctx, "lock:k", lock.Call{}) // waits until A's lease lapses
	if err != nil {
		t.Fatalf("B after A's lease lapsed: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("A's late release: %v (it should believe it still held the lock)", err)
	}
	if n := rdb.Exists(ctx, "lock:k").Val(); n != 0 {
		t.Fatal("A's late DEL left B's lock: the flaw did not show")
	}
	quick := opts
	quick.Wait = 100 * time.Millisecond
	c, err := lock.NewSetNXPX(rdb, quick).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("C while B holds: %v (want it to get in: two holders)", err)
	}
	// B and C now both hold the lock.
	c.Release(ctx)
	b.Release(ctx)
}

// TestCheckDelLateReleaseLeavesNextHolderAlone is what rung 5 fixes over
// rung 4: without a pause between the GET and the DEL, a holder whose lease
// lapsed sees another token and leaves that lock alone.
