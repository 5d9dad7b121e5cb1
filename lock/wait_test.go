package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

func TestParseWaitMode(t *testing.T) {
	for _, m := range lock.WaitModes {
		if got, err := lock.ParseWaitMode(string(m)); err != nil || got != m {
			t.Errorf("ParseWaitMode(%q) = %q, %v", m, got, err)
		}
	}
	if _, err := lock.ParseWaitMode("spin"); err == nil {
		t.Error("ParseWaitMode(spin) succeeded")
	}
}

func TestExponentialBackoff(t *testing.T) {
	for _, j := range []lock.Jitter{lock.FullJitter, lock.EqualJitter} {
		b := lock.ExponentialBackoff(time.Millisecond, 8*time.Millisecond, j)()
		step := time.Millisecond
		for range 10 {
			d := b.NextBackoff()
			lo := time.Duration(0)
			if j == lock.EqualJitter {
				lo = step / 2
			}
			if d < lo || d >= step {
				t.Fatalf("jitter %d: pause %s outside [%s, %s)", j, d, lo, step)
			}
			step = min(2*step, 8*time.Millisecond)
		}
	}
}

// TestWaitModes: every mechanism, picked by Options or by the context,
// keeps rung 6 exact under contention, gives up at the wait bound, and
// returns at once when the caller cancels.
func TestWaitModes(t *testing.T) {
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, notify.Options{})
	for _, m := range lock.WaitModes {
		t.Run(string(m), func(t *testing.T) {
			ctx := context.Background()
			o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n,
				Retry: lock.FixedSleep(time.Millisecond), Backoff: lock.ExponentialBackoff(time.Millisecond, 8*time.Millisecond, lock.FullJitter)}

			// Picked by the context, over Options' default (fixed).
			contend(t, rdb, lock.NewLua(rdb, o), lock.Call{Wait: m}, "n:call:"+string(m), 10, 20)
			// Picked by Options.
			om := o
			om.WaitMode = m
			contend(t, rdb, lock.NewLua(rdb, om), lock.Call{}, "n:opts:"+string(m), 10, 20)

			// The wait bound.
			ob := om
			ob.Wait = 150 * time.Millisecond
			l := lock.NewLua(rdb, ob)
			held, err := l.Obtain(ctx, "lock:bound", lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release(ctx)
			start := time.Now()
			if _, err := l.Obtain(ctx, "lock:bound", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Obtain while held: %v, want ErrNotObtained after the wait bound", err)
			}
			if waited := time.Since(start); waited < ob.Wait || waited > ob.Wait+500*time.Millisecond {
				t.Errorf("gave up after %s, want about the wait bound %s", waited, ob.Wait)
			}

			// Cancellation, mid-wait.
			om.Wait = 10 * time.Second
			cctx, cancel := context.WithCancel(ctx)
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			start = time.Now()
			if _, err := lock.NewLua(rdb, om).Obtain(cctx, "lock:bound", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Obtain cancelled mid-wait: %v", err)
			}
			if waited := time.Since(start); waited > 500*time.Millisecond {
				t.Errorf("cancellation took %s to be noticed", waited)
			}
		})
	}
}

// TestNotifyWakesOnRelease: a notify waiter takes the lock right after the
// release, not at its fallback tick.
func TestNotifyWakesOnRelease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	n := notifier(t, rdb, notify.Options{Fallback: 5 * time.Second})
	for _, tc := range []struct {
		name string
		l    lock.Locker
	}{
		{"lua", lock.NewLua(rdb, lock.Options{TTL: 5 * time.Second, WaitMode: lock.WaitNotify, Notifier: n})},
		{"setnx", lock.NewSetNX(rdb, lock.Options{WaitMode: lock.WaitNotify, Notifier: n})},
		{"reentrant", lock.NewReentrant(rdb, lock.Options{TTL: 5 * time.Second, WaitMode: lock.WaitNotify, Notifier: n})},
		{"fenced", lock.NewFenced(rdb, lock.Options{TTL: 5 * time.Second, WaitMode: lock.WaitNotify, Notifier: n})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "lock:" + tc.name
			a, err := tc.l.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			b := locktest.ObtainAsync(ctx, tc.l, key)
			time.Sleep(50 * time.Millisecond) // b has tried once and sleeps
			released := time.Now()
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			got := <-b
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			if woke := got.At.Sub(released); woke > time.Second {
				t.Fatalf("took the lock %s after the release: woken by the fallback, not the release", woke)
			}
			got.L.Release(ctx)
		})
	}
}

// TestNotifyWithoutNotifierPolls: WaitNotify with no Notifier still works
// (it polls, as WaitBackoff).
func TestNotifyWithoutNotifierPolls(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitNotify,
		Backoff: lock.ExponentialBackoff(time.Millisecond, 4*time.Millisecond, lock.FullJitter)}
	contend(t, rdb, lock.NewLua(rdb, o), lock.Call{}, "n", 5, 10)
}

// TestFairBoundAndCancel: a fair waiter gives up at the wait bound, or at
// once when cancelled, and leaves the queue either way.
func TestFairBoundAndCancel(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	o.Wait = 150 * time.Millisecond
	f := lock.NewFair(rdb, o)
	held, err := f.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := f.Obtain(ctx, "lock:k", lock.Call{}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fair Obtain while held: %v", err)
	}
	if waited := time.Since(start); waited < o.Wait || waited > o.Wait+500*time.Millisecond {
		t.Errorf("gave up after %s, want about %s", waited, o.Wait)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := f.Obtain(cctx, "lock:k", lock.Call{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled fair Obtain: %v", err)
	}
	if q := rdb.LLen(ctx, lock.QueueKey("lock:k")).Val(); q != 0 {
		t.Fatalf("%d entries left in the queue by waiters that gave up", q)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCountsRetriesAndHandoffs: a polling lock counts the tries that found
// the lock held; fair counts the locks its release handed over.
func TestCountsRetriesAndHandoffs(t *testing.T) {
	t.Parallel() // its own Redis, and no bound in time
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, notify.Options{})
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n}
	lua := lock.NewLua(rdb, o)
	contend(t, rdb, lua, lock.Call{Wait: lock.WaitFixed}, "n:lua", 10, 20)
	if got := lua.(lock.Counter).Counts(); got.Retries == 0 || got.Handoffs != 0 {
		t.Errorf("lua after 200 contended sections: %+v, want retries and no handoff", got)
	}
	fair := lock.NewFair(rdb, o)
	contend(t, rdb, fair, lock.Call{}, "n:fair", 10, 20)
	if got := fair.Counts(); got.Handoffs == 0 {
		t.Errorf("fair after 200 contended sections: %+v, want handoffs", got)
	}
}

// TestAfterDrivesTheWaits: with Options.After, a waiter tries again when
// the channel it was given delivers, not when its pause has passed (the
// explorer's waits on its own clock).
func TestAfterDrivesTheWaits(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	asked := make(chan time.Duration, 8)
	fire := make(chan time.Time, 8)
	after := func(d time.Duration) <-chan time.Time {
		asked <- d
		return fire
	}
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitFixed, Retry: lock.FixedSleep(time.Millisecond), After: after}
	l := lock.NewLua(rdb, o)
	held, err := l.Obtain(ctx, "lock:after", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := l.Obtain(ctx, "lock:after", lock.Call{})
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	select {
	case d := <-asked:
		if d != time.Millisecond {
			t.Errorf("the waiter asked to sleep %s, want its 1ms pause", d)
		}
	case err := <-got:
		t.Fatalf("Obtain returned (%v) without waiting by Options.After's timer", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never asked Options.After's timer")
	}
	select {
	case err := <-got:
		t.Fatalf("Obtain returned (%v) before its wait was ended", err)
	case d := <-asked:
		t.Fatalf("tried again (and asked for %s) before its wait was ended", d)
	case <-time.After(100 * time.Millisecond): // a hundred pauses
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	fire <- time.Now()
	if err := <-got; err != nil {
		t.Fatalf("Obtain once woken, the lock free: %v", err)
	}
}
