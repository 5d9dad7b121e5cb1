package lock_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// naiveRungs are the Redis rungs 2 to 5 and 7. lease says whether the lock
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
type skewClock struct{ off atomic.Int64 }

func (c *skewClock) Now() time.Time                           { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *skewClock) Advance(d time.Duration)                  { c.off.Add(int64(d)) }
func withSkewClock(o lock.Options, c *skewClock) lock.Options { o.Clock = c.Now; return o }

// TestGetSetExpiredLockHasOneWinner: waiters racing to take over an expired
// lock (a crashed holder's) through GET and GETSET: exactly one wins.
func TestGetSetExpiredLockHasOneWinner(t *testing.T) {
	rdb, _ := redistest.Start(t)
	opts := fast
	opts.TTL = 10 * time.Second
	opts.Wait = 5 * time.Second
	opts.Retry = lock.FixedSleep(time.Millisecond)
	l := lock.NewGetSet(rdb, opts)

	const rounds, waiters = 10, 8
	for round := range rounds {
		ctx := context.Background()
		stale := time.Now().Add(-time.Second).UnixMilli()
		if err := rdb.Set(ctx, "lock:k", stale, 0).Err(); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		var won atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := l.Obtain(wctx, "lock:k", lock.Call{})
				switch {
				case err == nil:
					won.Add(1)
					cancel() // the others stop waiting
				case !errors.Is(err, lock.ErrNotObtained):
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		cancel()
		if n := won.Load(); n != 1 {
			t.Fatalf("round %d: %d waiters won the expired lock, want exactly 1", round, n)
		}
		if v, _ := rdb.Get(ctx, "lock:k").Int64(); v <= time.Now().UnixMilli() {
			t.Fatalf("round %d: lock value %d is not a live expiry", round, v)
		}
		rdb.Del(ctx, "lock:k")
	}
}

// TestGetSetSkewedClockTakesLiveLock is rung 7's clock flaw: an instance
// whose clock runs ahead by more than the TTL judges a live lock expired
// and takes it. An instance with a correct clock cannot.
func TestGetSetSkewedClockTakesLiveLock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	opts := fast // TTL 1s

	a, err := lock.NewGetSet(rdb, opts).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.NewGetSet(rdb, opts).Obtain(ctx, "lock:k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("correct clock while A holds: got %v, want ErrNotObtained", err)
	}
	ahead := &skewClock{}
	ahead.Advance(2 * opts.TTL)
	b, err := lock.NewGetSet(rdb, withSkewClock(opts, ahead)).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("clock %s ahead while A holds: %v (want it to take the lock: two holders)", 2*opts.TTL, err)
	}
	// A and B both hold the lock. A's clock says it is still inside its
	// expiry, so its release deletes B's lock too.
	if err := a.Release(ctx); err != nil {
		t.Errorf("A's release: %v", err)
	}
	b.Release(ctx)
}

// TestGetSetSlowHolderLosesLock: once A's expiry passes (its business was
// slow), B takes the lock over; A's release then sees its own expiry passed,
// returns ErrNotHeld and leaves B's key alone.
func TestGetSetSlowHolderLosesLock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	c := &skewClock{}
	opts := withSkewClock(fast, c)
	l := lock.NewGetSet(rdb, opts)

	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(opts.TTL + 10*time.Millisecond) // A's business outlives the TTL
	b, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("B after A's expiry: %v", err)
	}
	value := rdb.Get(ctx, "lock:k").Val()
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's release after its expiry: got %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, "lock:k").Val(); got != value {
		t.Fatalf("A's late release changed B's lock: %q, want %q", got, value)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B's release: %v", err)
	}
}

// TestGetSetReleaseAfterOwnExpiryLeavesKey: even with no one waiting, a
// release past the holder's own expiry does not DEL. The key, which has no
// TTL, stays until a waiter takes it over.
func TestGetSetReleaseAfterOwnExpiryLeavesKey(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	c := &skewClock{}
	l := lock.NewGetSet(rdb, withSkewClock(fast, c))

	a, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	value := rdb.Get(ctx, "lock:k").Val()
	if want := strconv.FormatInt(c.Now().Add(fast.TTL).UnixMilli(), 10); len(value) != len(want) {
		t.Errorf("lock value %q, want an expiry in Unix ms like %q", value, want)
	}
	c.Advance(fast.TTL + time.Millisecond)
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release after own expiry: got %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, "lock:k").Val(); got != value {
		t.Fatalf("lock key after a late release = %q, want %q left in place", got, value)
	}
	if _, err := l.Obtain(ctx, "lock:k", lock.Call{}); err != nil {
		t.Fatalf("a waiter after the expiry should take the key over: %v", err)
	}
}

// TestNaiveRungsExactUnderContention: when nothing is slow and nobody
// crashes, every one of these rungs excludes, so the non-atomic increment
// loses no update. Their flaws need the faults above.
func TestNaiveRungsExactUnderContention(t *testing.T) {
	rdb, _ := redistest.Start(t)
	opts := lock.Options{TTL: 5 * time.Second, Wait: 20 * time.Second, Retry: lock.FixedSleep(time.Millisecond)}
	for _, r := range naiveRungs {
		t.Run(r.name, func(t *testing.T) {
			contend(t, rdb, r.new(rdb, opts), lock.Call{}, "n:"+r.name, 10, 20)
		})
	}
}
