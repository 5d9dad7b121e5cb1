package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
)

func dur(d time.Duration) *time.Duration { return &d }

// TestCallTry: Call.Try bounds one call's wait, as tryLock(time, unit): 0
// makes one attempt and answers ErrBusy at once when the lock is held; a
// positive bound gives up after it, not after the Locker's own.
func TestCallTry(t *testing.T) {
	rdb, _ := redistest.Start(t)
	clients, _ := redistest.StartMasters(t, 3)
	ctx := context.Background()
	// No clock judges the answers: ErrBusy comes only from the one
	// attempt of a Try of 0, and the Locker's own bound is an hour, so a
	// call that ignored its Try would get the lock once the holder's 5s
	// lease ran out (or, under a watchdog, hang) instead of giving up.
	o := lock.Options{TTL: 5 * time.Second, Wait: time.Hour, Retry: lock.FixedSleep(2 * time.Millisecond)}
	for _, tc := range []struct {
		name string
		l    lock.Locker
	}{
		{"local", lock.NewLocal(o)},
		{"lua", lock.NewLua(rdb, o)},
		{"reentrant", lock.NewReentrant(rdb, o)},
		{"redlock", speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(clients), o, lock.RedlockOptions{}))},
		{"fair", lock.NewFair(rdb, o)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "lock:try:" + tc.name
			held, err := tc.l.Obtain(ctx, key, lock.Call{Try: dur(0)})
			if err != nil {
				t.Fatalf("one attempt at a free lock: %v", err)
			}
			defer held.Release(ctx)
			if _, err := tc.l.Obtain(ctx, key, lock.Call{Try: dur(0)}); !errors.Is(err, lock.ErrBusy) || !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("one attempt at a held lock: %v, want ErrBusy", err)
			}
			start := time.Now()
			if _, err := tc.l.Obtain(ctx, key, lock.Call{Try: dur(80 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrBusy) {
				t.Fatalf("an 80ms try at a held lock: %v, want ErrNotObtained after waiting", err)
			}
			if took := time.Since(start); took < 80*time.Millisecond {
				t.Errorf("an 80ms try gave up after %s", took)
			}
		})
	}
}

// TestCallLease: Call.Lease is this call's lease, and (Redisson's rule) a
// lease given means no renewal: the watchdog rungs run without one.
func TestCallLease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := lock.Options{TTL: 5 * time.Second, Wait: time.Second}
	lease := lock.Call{Lease: 700 * time.Millisecond}
	for _, tc := range []struct {
		name     string
		l        lock.Locker
		watchdog bool
	}{
		{"lua", lock.NewLua(rdb, o), false},
		{"fenced", lock.NewFenced(rdb, o), false},
		{"reentrant", lock.NewReentrant(rdb, o), true},
		{"fair", lock.NewFair(rdb, o), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "lock:lease:" + tc.name
			l, err := tc.l.Obtain(ctx, key, lease)
			if err != nil {
				t.Fatal(err)
			}
			if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > lease.Lease {
				t.Errorf("TTL %s, want the call's lease %s, not the default %s", ttl, lease.Lease, o.TTL)
			}
			if tc.watchdog && lock.HasWatchdog(l) {
				t.Error("a lease given, and a watchdog renews it")
			}
			l.Release(ctx)
			if !tc.watchdog {
				return
			}
			// Without a lease given, the watchdog runs as before.
			l, err = tc.l.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
			if !lock.HasWatchdog(l) {
				t.Error("no lease given, and no watchdog")
			}
		})
	}
}
