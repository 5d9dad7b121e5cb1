package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// naiveRungs are the Redis rungs 2 to 5, 7 and 8. lease says whether the lock
// key carries a Redis TTL.
var naiveRungs = []struct {
	name  string
	new   func(redis.Cmdable, lock.Options) lock.Locker
	lease bool
}{
	{"setnx", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewSetNX(r, o) }, false},
	{"setnx-expire", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewSetNXExpire(r, o) }, true},
	{"setnx-px", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewSetNXPX(r, o) }, true},
	{"check-del", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewCheckDel(r, o) }, true},
	{"del-setnx", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewDelSetNX(r, o) }, false},
	{"getset", func(r redis.Cmdable, o lock.Options) lock.Locker { return lock.NewGetSet(r, o) }, false},
}

// TestNaiveRungsContract checks what every rung must do when nothing goes
// wrong: exclude while held, give up after the wait bound, honour
// cancellation, and free the key on release.
func TestNaiveRungsContract(t *testing.T) {
	rdb, _ := redistest.Start(t)
	for _, r := range naiveRungs {
		t.Run(r.name, func(t *testing.T) {
			ctx := context.Background()
			key := "lock:" + r.name
			l := r.new(rdb, fast)

			a, err := l.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			ttl := rdb.PTTL(ctx, key).Val()
			if r.lease && (ttl <= 0 || ttl > fast.TTL) {
				t.Errorf("lock key PTTL = %s, want a lease in (0, %s]", ttl, fast.TTL)
			}
			if !r.lease && ttl != -1 {
				t.Errorf("lock key PTTL = %s, want -1 (no TTL)", ttl)
			}

			start := time.Now()
			if _, err := l.Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("Obtain while held: got %v, want ErrNotObtained", err)
			}
			if waited := time.Since(start); waited < fast.Wait || waited > fast.Wait+time.Second {
				t.Errorf("waited %s, want about the wait bound %s", waited, fast.Wait)
			}

			long := fast
			long.Wait = 10 * time.Second
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(20*time.Millisecond, cancel)
			start = time.Now()
			_, err = r.new(rdb, long).Obtain(cctx, key, lock.Call{})
			if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Obtain cancelled while waiting: got %v, want ErrNotObtained wrapping context.Canceled", err)
			}
			if waited := time.Since(start); waited > time.Second {
				t.Errorf("cancelled Obtain returned after %s", waited)
			}

			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if n := rdb.Exists(ctx, key).Val(); n != 0 {
				t.Fatal("lock key still there after release")
			}
			if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("second Release: got %v, want ErrNotHeld", err)
			}
			b, err := l.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatalf("Obtain after release: %v", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNaiveRungsRedisDownIsAnErrorNotATimeout(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	for _, r := range naiveRungs {
		t.Run(r.name, func(t *testing.T) {
			_, err := r.new(rdb, fast).Obtain(context.Background(), "lock:k", lock.Call{})
			if err == nil || errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("got %v, want a connection error", err)
			}
		})
	}
}

// TestSetNXDeadlocksWhenHolderDies is rung 2's flaw: the key has no TTL, so
// a holder that never releases blocks everyone, however long they wait.
func TestNaiveRungsExactUnderContention(t *testing.T) {
	t.Parallel() // its own Redis, and no bound in time
	rdb, _ := redistest.Start(t)
	opts := lock.Options{TTL: 5 * time.Second, Wait: 20 * time.Second, Retry: lock.FixedSleep(time.Millisecond)}
	for _, r := range naiveRungs {
		t.Run(r.name, func(t *testing.T) {
			contend(t, rdb, r.new(rdb, opts), lock.Call{}, "n:"+r.name, 10, 20)
		})
	}
}
