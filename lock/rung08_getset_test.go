package lock_test

import (
	"context"
	"errors"
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

type skewClock struct{ off atomic.Int64 }

func (c *skewClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

func (c *skewClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

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

// TestGetSetSkewedClockTakesLiveLock is rung 8's clock flaw: an instance
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

// TestCallSkewRunsTheCallsClockAhead: skew= on one request (Call.Skew)
// is that request's clock run ahead, as an instance's -clock-skew runs
// all of its requests': a call of the same Locker skewed past the lease
// takes a live lock on the rungs that judge expiries by the clock
// (del-setnx, getset), and keeps its clock to judge its own release by;
// lua, whose lease is Redis's, does not read it.
func TestCallSkewRunsTheCallsClockAhead(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	once := time.Duration(0)
	for _, tc := range []struct {
		name  string
		l     lock.Locker
		takes bool
	}{
		{"del-setnx", lock.NewDelSetNX(rdb, fast), true},
		{"getset", lock.NewGetSet(rdb, fast), true},
		{"lua", lock.NewLua(rdb, fast), false},
	} {
		a, err := tc.l.Obtain(ctx, "lock:k", lock.Call{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := tc.l.Obtain(ctx, "lock:k", lock.Call{Try: &once}); !errors.Is(err, lock.ErrBusy) {
			t.Fatalf("%s, no skew, while A holds: %v, want ErrBusy", tc.name, err)
		}
		if _, err := tc.l.Obtain(ctx, "lock:k", lock.Call{Try: &once, Skew: fast.TTL / 2}); !errors.Is(err, lock.ErrBusy) {
			t.Fatalf("%s, skewed by half the lease, while A holds: %v, want ErrBusy", tc.name, err)
		}
		b, err := tc.l.Obtain(ctx, "lock:k", lock.Call{Try: &once, Skew: 2 * fast.TTL})
		switch {
		case tc.takes && err != nil:
			t.Fatalf("%s, skewed by two leases, while A holds: %v, want the lock (two holders)", tc.name, err)
		case !tc.takes && !errors.Is(err, lock.ErrBusy):
			t.Fatalf("%s, skewed, while A holds: %v, want ErrBusy: its lease is not judged by the clock", tc.name, err)
		}
		if tc.takes {
			// B's expiry is two leases ahead of the others' clocks, and
			// B judges its release by its own clock: it lets go.
			if err := b.Release(ctx); err != nil {
				t.Errorf("%s: B's release: %v", tc.name, err)
			}
		}
		a.Release(ctx)
		rdb.Del(ctx, "lock:k")
	}
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

// TestTakeoverPauseAtExpired is the window the crash-wait scenario widens
// (takeover=): P3 has read the dead holder's expired timestamp and stops
// at fault.Expired; P2 takes the lock over meanwhile. Rung 7's DEL then
// deletes P2's fresh lock and P3 holds it too; rung 8's GETSET finds P2's
// value, not the expired one P3 read, and P3 stays out.
func TestTakeoverPauseAtExpired(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := lock.Options{TTL: 10 * time.Second}
	for _, tc := range []struct {
		name    string
		locker  func(redis.Cmdable, lock.Options) lock.Locker
		p3holds bool
	}{
		{"del-setnx", lock.NewDelSetNX, true},
		{"getset", lock.NewGetSet, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			const key = "lock:k"
			rdb.Set(ctx, key, time.Now().Add(-time.Second).UnixMilli(), 0) // a dead holder's expiry
			t.Cleanup(func() { rdb.Del(ctx, key) })
			// Two instances: one instance's waiters queue behind P3.
			l, other := tc.locker(rdb, o), tc.locker(rdb, o)
			var p2 lock.Lock
			paused := fault.With(ctx, func(_ context.Context, p fault.Point) {
				if p != fault.Expired || p2 != nil {
					return
				}
				var err error
				if p2, err = other.Obtain(ctx, key, lock.Call{Try: dur(0)}); err != nil {
					t.Errorf("P2 during P3's pause: %v", err)
				}
			})
			p3, err := l.Obtain(paused, key, lock.Call{Try: dur(0)})
			if p2 == nil {
				t.Fatal("P3 never stopped at fault.Expired with P2 taking the lock")
			}
			switch {
			case tc.p3holds && err != nil:
				t.Fatalf("P3: %v; want it to hold the lock too (its DEL freed P2's)", err)
			case !tc.p3holds && !errors.Is(err, lock.ErrNotObtained):
				t.Fatalf("P3: lock %v, err %v; want ErrNotObtained (P2 holds it)", p3, err)
			}
		})
	}
}
