package lock_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

func TestSetNXExpireCrashBetweenLeavesNoTTL(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast
	opts.TTL = 50 * time.Millisecond
	opts.Wait = 4 * opts.TTL
	l := lock.NewSetNXExpire(rdb, opts)

	var reached atomic.Bool
	crash := fault.With(ctx, func(_ context.Context, p fault.Point) {
		if p == fault.BeforeExpire {
			reached.Store(true)
			runtime.Goexit()
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Obtain(crash, "lock:k", lock.Call{})
		t.Error("Obtain returned: the crash did not happen")
	}()
	<-done
	if !reached.Load() {
		t.Fatal("the injector was not called at BeforeExpire")
	}
	if ttl := rdb.PTTL(ctx, "lock:k").Val(); ttl != -1 {
		t.Fatalf("lock key PTTL = %s after a crash between SETNX and EXPIRE, want -1", ttl)
	}
	if _, err := l.Obtain(ctx, "lock:k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain after the crash, %s later: got %v, want ErrNotObtained", opts.Wait, err)
	}
}

// TestSetNXPXLateDeleteFreesNextHolder is rung 4's flaw: A outlives its
// lease, B takes the lock, A's plain DEL frees B's lock, and C enters while
// B still holds it.
