package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/lock"
)

func TestLocal(t *testing.T) {
	ctx := context.Background()
	l := lock.NewLocal(fast)

	a, err := l.Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Obtain(ctx, "other", lock.Call{})
	if err != nil {
		t.Fatalf("another key must be free: %v", err)
	}
	defer other.Release(ctx)

	start := time.Now()
	if _, err := l.Obtain(ctx, "k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second Obtain while held: got %v, want ErrNotObtained", err)
	}
	if waited := time.Since(start); waited < fast.Wait || waited > fast.Wait+time.Second {
		t.Errorf("waited %s, want about the wait bound %s", waited, fast.Wait)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Obtain(cctx, "k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Obtain with a cancelled ctx: got %v", err)
	}

	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second Release: got %v, want ErrNotHeld", err)
	}
	b, err := l.Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatalf("Obtain after release: %v", err)
	}
	b.Release(ctx)
}

// TestLocalIsPerProcess shows rung 1's flaw: two processes (two Local
// lockers) both hold the same key at once.
func TestLocalIsPerProcess(t *testing.T) {
	ctx := context.Background()
	a, err := lock.NewLocal(fast).Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	b, err := lock.NewLocal(fast).Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatalf("second process: %v", err)
	}
	b.Release(ctx)
}

// TestLocalIsReentrant: as Java's synchronized, the owner may take the
// lock it holds again (the articles' testReEnter), and only the last
// release frees it; another owner waits.
func TestLocalIsReentrant(t *testing.T) {
	ctx := context.Background()
	l := lock.NewLocal(fast)
	a := lock.Call{Owner: "a"}
	outer, err := l.Obtain(ctx, "k", a)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Obtain(ctx, "k", a)
	if err != nil {
		t.Fatalf("the owner re-entering: %v", err)
	}
	if _, err := l.Obtain(ctx, "k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another owner while held twice: %v, want ErrNotObtained", err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Obtain(ctx, "k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another owner after the inner release: %v, want ErrNotObtained: the outer still holds", err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := l.Obtain(ctx, "k", lock.Call{Owner: "b"})
	if err != nil {
		t.Fatalf("another owner after the last release: %v", err)
	}
	b.Release(ctx)
}
