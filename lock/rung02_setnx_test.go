package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/redis/go-redis/v9"
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

// The locks that release with a plain DEL (rungs 2 to 4, and 7 and 8 while
// their clock says the lease holds), and the reentrant lock's release
// script, can go in the pipeline of the business's last write: the same
// release, after the write, in one round trip. A key already gone is
// ErrNotHeld; a lease past its expiry queues no DEL at all (rungs 7 and
// 8).
func TestReleaseRidesTheWritePipeline(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		l    lock.Locker
	}{
		{"setnx", lock.NewSetNX(rdb, fast)},
		{"setnx-expire", lock.NewSetNXExpire(rdb, fast)},
		{"setnx-px", lock.NewSetNXPX(rdb, fast)},
		{"del-setnx", lock.NewDelSetNX(rdb, fast)},
		{"getset", lock.NewGetSet(rdb, fast)},
		{"reentrant", lock.NewReentrant(rdb, fast)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, data := "lock:"+tc.name, "n:"+tc.name
			for _, gone := range []bool{false, true} {
				held, err := tc.l.Obtain(ctx, key, lock.Call{})
				if err != nil {
					t.Fatal(err)
				}
				pr, ok := held.(lock.PipelineReleaser)
				if !ok {
					t.Fatalf("%T cannot release in a pipeline", held)
				}
				if gone {
					rdb.Del(ctx, key)
				}
				var released func() error
				var set *redis.StatusCmd
				cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					set = p.Set(ctx, data, 1, 0)
					released = pr.ReleaseIn(ctx, p)
					return nil
				})
				if set.Err() != nil || len(cmds) != 2 {
					t.Fatalf("pipeline %v, SET %v: want the write and the release", cmds, set.Err())
				}
				err = released()
				switch {
				case gone && !errors.Is(err, lock.ErrNotHeld):
					t.Fatalf("release of a key already gone: %v, want ErrNotHeld", err)
				case !gone && err != nil:
					t.Fatalf("release: %v", err)
				}
				if rdb.Exists(ctx, key).Val() != 0 {
					t.Fatalf("%s still held after the pipeline", key)
				}
			}
		})
	}

	// Past its expiry, rung 7's lock is no longer ours to DEL.
	o := fast
	o.TTL = 30 * time.Millisecond
	held, err := lock.NewDelSetNX(rdb, o).Obtain(ctx, "lock:late", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * o.TTL)
	rdb.Set(ctx, "lock:late", "another holder's", 0)
	var released func() error
	cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "lock:late")
		released = held.(lock.PipelineReleaser).ReleaseIn(ctx, p)
		return nil
	})
	if err := released(); !errors.Is(err, lock.ErrNotHeld) || len(cmds) != 1 {
		t.Fatalf("a lapsed lease's release: %v and %d commands, want ErrNotHeld and no DEL", err, len(cmds))
	}
	if rdb.Exists(ctx, "lock:late").Val() != 1 {
		t.Fatal("a lapsed lease's release deleted another holder's lock")
	}
}
