package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

func TestSetNXDeadlocksWhenHolderDies(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast
	opts.TTL = 50 * time.Millisecond
	opts.Wait = 4 * opts.TTL
	l := lock.NewSetNX(rdb, opts)

	if _, err := l.Obtain(ctx, "lock:k", lock.Call{}); err != nil { // and then "dies"
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, "lock:k").Val(); ttl != -1 {
		t.Fatalf("lock key PTTL = %s, want -1 (no TTL)", ttl)
	}
	if _, err := l.Obtain(ctx, "lock:k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain after the holder died, %s later: got %v, want ErrNotObtained", opts.Wait, err)
	}
	if ttl := rdb.PTTL(ctx, "lock:k").Val(); ttl != -1 {
		t.Fatalf("lock key PTTL = %s after several TTLs, want -1: still stuck", ttl)
	}
}

// TestSetNXExpireCrashBetweenLeavesNoTTL is rung 3's flaw: the process dies
// between SETNX and EXPIRE (runtime.Goexit ends the goroutine there, as a
// crash would end the process), and the key is left without a TTL.
