package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

var notifier = locktest.Notifier

// TestFairFIFO: waiters that queued in order get the lock in that order.
func TestFairFIFO(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key, waiters = "lock:k", 6
	f := lock.NewFair(rdb, locktest.FairOpts(notifier(t, rdb, notify.Options{})))

	first, err := f.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range waiters {
		wg.Go(func() {
			l, err := f.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
		locktest.Queued(t, rdb, key, i+1) // waiter i is in the queue before i+1 starts
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("served in order %v, want %v", order, want)
	}
	for _, k := range []string{key, lock.QueueKey(key), lock.QueueKey(key) + ":live"} {
		if rdb.Exists(ctx, k).Val() != 0 {
			t.Errorf("%s left behind", k)
		}
	}
}

// TestFairHandsOffOnRelease: the release script itself writes the next
// waiter's token into the lock key, with the next fencing token, and wakes
// that waiter by name: it holds the lock before it runs a single command,
// and long before its refresh tick.
func TestFairHandsOffOnRelease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	f := lock.NewFair(rdb, locktest.FairOpts(notifier(t, rdb, notify.Options{})))

	a, err := f.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	b := locktest.ObtainAsync(ctx, f, key)
	next := locktest.Queued(t, rdb, key, 1)[0]

	released := time.Now()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, key).Val(); got != next {
		t.Fatalf("right after the release the lock holds %q, want the waiter's token %q", got, next)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 4*time.Second {
		t.Errorf("the handed lock's lease is %s, want a fresh one (5s)", ttl)
	}
	got := <-b
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	// The refresh tick is 250ms, drawn in [125ms, 375ms): well past this.
	if woke := got.At.Sub(released); woke > 100*time.Millisecond {
		t.Errorf("the waiter noticed its handoff after %s: it polled rather than being woken", woke)
	}
	ta, tb := a.(lock.Tokened).Token(), got.L.(lock.Tokened).Token()
	if fence, _ := rdb.Get(ctx, lock.FenceKey(key)).Int64(); tb != fence || tb <= ta {
		t.Fatalf("tokens: first %d, handed %d, counter %d", ta, tb, fence)
	}
	if err := got.L.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := got.L.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}

// TestFairSkipsStaleWaiters: a waiter that died (its entry no longer
// refreshed) or gave up is skipped; the lock goes to the next live one.
func TestFairSkipsStaleWaiters(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	q, live := lock.QueueKey(key), lock.QueueKey(key)+":live"
	f := lock.NewFair(rdb, locktest.FairOpts(notifier(t, rdb, notify.Options{})))

	a, err := f.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	// A dead waiter's entry, its deadline already past (on Redis's clock).
	now, _ := rdb.Time(ctx).Result()
	rdb.RPush(ctx, q, "dead")
	rdb.HSet(ctx, live, "dead", now.UnixMilli()-1)

	// A waiter that gives up: its entry leaves the queue with it.
	shortCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	quitter := locktest.ObtainAsync(shortCtx, f, key)
	locktest.Queued(t, rdb, key, 2)
	if got := <-quitter; !errors.Is(got.Err, lock.ErrNotObtained) {
		t.Fatalf("the quitter: %v, want ErrNotObtained", got.Err)
	}
	if got := rdb.LRange(ctx, q, 0, -1).Val(); !slices.Equal(got, []string{"dead"}) {
		t.Fatalf("queue after the quitter left: %v, want [dead]", got)
	}

	b := locktest.ObtainAsync(ctx, f, key)
	next := locktest.Queued(t, rdb, key, 2)[1]
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, key).Val(); got != next {
		t.Fatalf("lock handed to %q, want the live waiter %q", got, next)
	}
	got := <-b
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	got.L.Release(ctx)
	if n := rdb.Exists(ctx, q, live).Val(); n != 0 {
		t.Fatalf("queue keys left: %d", n)
	}
}

// TestFairHandoffToADeadWaiterDoesNotWedge: a waiter handed the lock just
// as it died never uses it; the lease lapses, and the next live waiter
// gets the lock on its refresh tick.
func TestFairHandoffToADeadWaiterDoesNotWedge(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	o.TTL = 200 * time.Millisecond
	f := lock.NewFair(rdb, o)
	a, err := f.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	now, _ := rdb.Time(ctx).Result()
	rdb.RPush(ctx, lock.QueueKey(key), "dying")
	rdb.HSet(ctx, lock.QueueKey(key)+":live", "dying", now.UnixMilli()+int64(time.Minute/time.Millisecond))
	b := locktest.ObtainAsync(ctx, f, key)
	locktest.Queued(t, rdb, key, 2)
	released := time.Now()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rdb.Get(ctx, key).Val(); got != "dying" {
		t.Fatalf("lock holds %q, want the dying waiter, first in line", got)
	}
	got := <-b
	if got.Err != nil {
		t.Fatalf("the next waiter: %v", got.Err)
	}
	// The dead waiter's lease (200ms), then the next refresh tick
	// (50ms, drawn in [25ms, 75ms)), then slack for a loaded machine.
	after := got.At.Sub(released)
	t.Logf("the next waiter got the lock %s after the release to a dead waiter (lease %s)", after, o.TTL)
	if after > o.TTL+time.Second {
		t.Fatalf("the queue was wedged for %s", after)
	}
	got.L.Release(ctx)
}

// TestFairWatchdog: a holder that outlives the TTL keeps the lock; the
// watchdog stops on release.
func TestFairWatchdog(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := locktest.FairOpts(nil)
	o.TTL = 150 * time.Millisecond
	f := lock.NewFair(rdb, o)
	a, err := f.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 4*o.TTL; time.Sleep(5 * time.Millisecond) {
		if ttl := rdb.PTTL(ctx, "lock:k").Val(); ttl <= 0 {
			t.Fatalf("PTTL %s after %s: the watchdog did not renew", ttl, time.Since(start))
		}
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.FairWatchdogDone(a), time.Second, "fair watchdog after release")
	time.Sleep(2 * o.TTL)
	if rdb.Exists(ctx, "lock:k").Val() != 0 {
		t.Fatal("lock key back after release")
	}
}

// TestFairExactAndNobodyStarves: many waiters, with and without a
// Notifier: no update lost, and nobody waits longer than its turn. A
// request waits at most for the others already in the queue, each once,
// and for those that slipped in while its own entry was on its way, each
// once more: at most twice the other workers' sections begin while it
// waits. Counted in sections, not in time, the bound holds however loaded
// the machine; a lock that lets pollers race (lua in fair's place) breaks
// it by dozens.
func TestFairExactAndNobodyStarves(t *testing.T) {
	t.Parallel() // its own Redis; waits on its waiters' polls, not the CPU
	rdb, _ := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		n       lock.Notifier
		backoff func() lock.Backoff
	}{
		{"notify", notifier(t, rdb, notify.Options{}), lock.ExponentialBackoff(time.Millisecond, 4*time.Millisecond, lock.FullJitter)},
		// Without a Notifier the 19 waiters poll for their handoff: at
		// 1 to 4ms each their scripts kept the server busy and every
		// handoff waited behind them (200ms a turn under -race on the
		// embedded Redis). At 10 to 40ms they leave it room; their order
		// is the queue's whatever the backoff, which only sets how many
		// tries each makes.
		{"polling", nil, lock.ExponentialBackoff(10*time.Millisecond, 40*time.Millisecond, lock.FullJitter)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const workers, each = 20, 15
			// The wait only bounds a hang: a turn is counted in
			// sections, and a loaded machine may take longer than 10s
			// to serve the 19 requests ahead (it did, under -race
			// beside other suites).
			o := lock.Options{TTL: 5 * time.Second, Wait: 2 * time.Minute, Notifier: tc.n, Backoff: tc.backoff}
			overtaken := locktest.ContendInTurn(t, rdb, lock.NewFair(rdb, o), lock.Call{}, "n:fair:"+tc.name, workers, each)
			t.Logf("at most %d sections began while one request waited", overtaken)
			if bound := int64(2 * (workers - 1)); overtaken > bound {
				t.Fatalf("%d sections began while one request waited, over its turn's %d: starved", overtaken, bound)
			}
		})
	}
}
