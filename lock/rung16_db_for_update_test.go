package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
)

// TestDBForUpdateExcludesAndQueues: the row lock is exact under
// contention, refuses at once with try=0 (NOWAIT), gives up at its bound,
// and frees the row at the commit.
func TestDBForUpdateExcludesAndQueues(t *testing.T) {
	rdb, _ := redistest.Start(t)
	db := servertest.MariaDB(t)
	ctx := context.Background()
	l, err := lock.NewDBForUpdate(ctx, db, lock.Options{Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	contend(t, rdb, l, lock.Call{}, "n:db", 10, 20)

	held, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("try=0 while held: %v, want ErrBusy", err)
	}
	start := time.Now()
	if _, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(300 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a 300ms try while held: %v, want ErrNotObtained", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("gave up after %s", took)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)})
	if err != nil {
		t.Fatalf("after the commit: %v", err)
	}
	again.Release(ctx)
}
