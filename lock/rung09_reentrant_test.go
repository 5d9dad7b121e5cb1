package lock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

func holdCount(t *testing.T, rdb *redis.Client, key, owner string) int64 {
	t.Helper()
	n, err := rdb.HGet(context.Background(), key, owner).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("HGET %s %s: %v", key, owner, err)
	}
	return n
}

// waitClosed fails the test unless ch closes within d.
func TestReentrantCountsNestedAcquisitions(t *testing.T) {
	rdb, _ := redistest.Start(t)
	r := lock.NewReentrant(rdb, holdOpts)
	ctx, procA := context.Background(), lock.Call{Owner: "proc-a:1"}
	const key = "lock:k"

	outer, err := r.Obtain(ctx, key, procA)
	if err != nil {
		t.Fatal(err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after the outer Obtain = %d, want 1", n)
	}
	inner, err := r.Obtain(ctx, key, procA) // testReEnter: sale() takes its own lock again
	if err != nil {
		t.Fatalf("re-entering: %v", err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 2 {
		t.Fatalf("count after re-entering = %d, want 2", n)
	}
	if n := lock.Watchdogs(r); n != 1 {
		t.Fatalf("%d watchdogs, want 1: only the outermost acquisition starts one", n)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after the inner Release = %d, want 1: still held", n)
	}
	if err := inner.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the inner acquisition released twice: %v, want ErrNotHeld", err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after a double release = %d, want 1 untouched", n)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key still there at count 0")
	}
	waitClosed(t, lock.WatchdogDone(outer), time.Second, "watchdog after the final release")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs after the final release, want 0", n)
	}
}

func TestReentrantExcludesOtherOwners(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, holdOpts)
	const key = "lock:k"

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("owner b while a holds: %v, want ErrNotObtained", err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("no owner while a holds: %v, want ErrNotObtained", err)
	}
	if n := holdCount(t, rdb, key, "b"); n != 0 {
		t.Fatalf("b has count %d in a's lock", n)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Without an owner in the context, every Obtain is a new owner: a
	// plain, non-reentrant lock.
	p, err := r.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a second owner-less Obtain re-entered: %v, want ErrNotObtained", err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReentrantWatchdogOutlivesTTL is the fix rung 9 brings over rung 6:
// a business four times longer than the TTL keeps its lock, and nobody
// else enters meanwhile. After the release, the watchdog is gone and the
// key stays gone.
func TestReentrantWatchdogOutlivesTTL(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	// A 200ms lease renewed every 67ms: a renewal may run late by more
	// than two periods (a loaded CI machine under -race) and still count.
	o := safeOpts
	o.TTL = 200 * time.Millisecond
	r := lock.NewReentrant(rdb, o)
	const key, hold = "lock:k", 800 * time.Millisecond

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	go func() {
		o := o
		o.Wait = hold - 100*time.Millisecond
		_, err := lock.NewReentrant(rdb, o).Obtain(ctx, key, lock.Call{Owner: "b"})
		other <- err
	}()
	for start := time.Now(); time.Since(start) < hold; time.Sleep(5 * time.Millisecond) {
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
			t.Fatalf("PTTL = %s after %s of a %s lease: the watchdog did not renew", ttl, time.Since(start), o.TTL)
		}
	}
	if err := <-other; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another owner during the hold: %v, want ErrNotObtained", err)
	}
	if n := holdCount(t, rdb, key, "a"); n != 1 {
		t.Fatalf("count after the hold = %d, want 1", n)
	}

	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(a), time.Second, "watchdog after release")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs after release", n)
	}
	time.Sleep(2 * o.TTL) // several renewal periods
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key back after release")
	}
}

// TestReentrantWatchdogStopsWhenLockIsGone: a renewal that finds the hash
// without our owner ends the watchdog on its own.
func TestReentrantWatchdogStopsWhenLockIsGone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, safeOpts)
	a, err := r.Obtain(ctx, "lock:k", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "lock:k")
	waitClosed(t, lock.WatchdogDone(a), time.Second, "watchdog of a deleted lock")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs left", n)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release of a deleted lock: %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, "lock:k").Val(); n != 0 {
		t.Fatalf("renewal or release recreated the key")
	}
}

// TestReentrantPausedOwnerLosesLock is the flaw rung 9 still shows: the
// holder's process pauses (GC, SIGSTOP) longer than the TTL, its watchdog
// with it; the lease lapses and another owner enters while the paused one
// still believes it holds the lock. Its late release is refused and
// leaves the new holder's count alone.
func TestReentrantPausedOwnerLosesLock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	// The waits only bound a hang: a takes a free lock, and b enters
	// once a's lease lapsed, however long the machine takes to get there
	// (with safeOpts' 100ms, a's first try on a loaded machine ran out).
	o := safeOpts
	o.Wait = time.Minute
	r := lock.NewReentrant(rdb, o)
	const key = "lock:k"

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	lock.StopWatchdog(a) // the process stops: nothing renews

	start := time.Now()
	b, err := lock.NewReentrant(rdb, o).Obtain(ctx, key, lock.Call{Owner: "b"})
	if err != nil {
		t.Fatalf("b while a is paused: %v; want b to enter once a's lease lapses", err)
	}
	t.Logf("b entered %s after a paused (TTL %s): two holders", time.Since(start).Round(time.Millisecond), safeOpts.TTL)
	if n := holdCount(t, rdb, key, "a"); n != 0 {
		t.Fatalf("a still has count %d", n)
	}

	// a wakes up (its watchdog never renews again)
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a's release after its lease lapsed: %v, want ErrNotHeld", err)
	}
	waitClosed(t, lock.WatchdogDone(a), time.Second, "a's watchdog")
	if n := holdCount(t, rdb, key, "b"); n != 1 {
		t.Fatalf("b's count after a's late release = %d, want 1", n)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(b), time.Second, "b's watchdog")
}

// TestReentrantLapsedAcquisitionLeavesNewLeaseAlone: the same owner's
// lease lapses and the owner takes the lock afresh; a late release of the
// lapsed acquisition must not decrement the new one's count.
func TestReentrantLapsedAcquisitionLeavesNewLeaseAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx, a := context.Background(), lock.Call{Owner: "a"}
	r := lock.NewReentrant(rdb, safeOpts)
	const key = "lock:k"

	old, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	lock.StopWatchdog(old)
	for deadline := time.Now().Add(time.Second); rdb.Exists(ctx, key).Val() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lease did not lapse")
		}
	}
	fresh, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(old), time.Second, "the lapsed lease's watchdog")
	if err := old.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release of the lapsed acquisition: %v, want ErrNotHeld", err)
	}
	if n := holdCount(t, rdb, key, "a"); n != 1 {
		t.Fatalf("the new lease's count = %d after the late release, want 1", n)
	}
	if err := fresh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(fresh), time.Second, "the new lease's watchdog")
}

func TestReentrantObtainHonoursContext(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := safeOpts
	o.Wait = 5 * time.Second
	r := lock.NewReentrant(rdb, o)
	a, err := r.Obtain(ctx, "lock:k", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Obtain(cctx, "lock:k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Obtain(dctx, "lock:k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx deadline: %v", err)
	}
	if waited := time.Since(start); waited >= o.Wait {
		t.Fatalf("waited %s for a 30ms ctx: the Locker's bound, not the ctx", waited)
	}
}

// TestReentrantLeavesNoWatchdog: many holders, nested or not, all
// released: every watchdog has returned.
func TestReentrantLeavesNoWatchdog(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	// A lease of a minute: what is checked is that the watchdogs end,
	// not that they renew in time. With safeOpts' 100ms, under -race on
	// two loaded cores, a renewal came late and a release found its
	// lease lapsed.
	o := safeOpts
	o.TTL = time.Minute
	r := lock.NewReentrant(rdb, o)
	var held []lock.Lock
	for i := range 20 {
		owner := lock.Call{Owner: "owner-" + strconv.Itoa(i)}
		for range 1 + i%3 {
			l, err := r.Obtain(ctx, "lock:"+strconv.Itoa(i), owner)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
	}
	if n := lock.Watchdogs(r); n != 20 {
		t.Fatalf("%d watchdogs for 20 held locks", n)
	}
	for i := len(held) - 1; i >= 0; i-- {
		if err := held[i].Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range held {
		waitClosed(t, lock.WatchdogDone(l), time.Second, "watchdog")
	}
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs left", n)
	}
}

// TestReentrantInnerReleaseRefreshesTheLease: leaving a nested acquisition
// gives the lease a fresh TTL while an outer one still holds it, as the
// articles' release script does.
func TestReentrantInnerReleaseRefreshesTheLease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx, a := context.Background(), lock.Call{Owner: "a"}
	o := safeOpts
	o.TTL = 10 * time.Second // the watchdog renews only after 3.3s
	r := lock.NewReentrant(rdb, o)
	const key = "lock:k"
	outer, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	defer outer.Release(ctx)
	inner, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	rdb.PExpire(ctx, key, time.Second) // most of the lease gone
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl < 9*time.Second {
		t.Fatalf("TTL after the inner release %s, want a fresh lease (about %s)", ttl, o.TTL)
	}
}
