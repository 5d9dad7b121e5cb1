package lock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
)

// safeOpts: a short lease, so that lapses and renewals happen within a
// test, and a short wait bound, so that refusals are quick.
var safeOpts = lock.Options{TTL: 100 * time.Millisecond, Wait: 100 * time.Millisecond, Retry: lock.FixedSleep(2 * time.Millisecond)}

// holdOpts: safeOpts with a lease nobody outlives, for the tests of
// exclusion and counting, where a lapse is not the point: with 100ms, a
// watchdog that ran late on a loaded machine (under -race beside other
// suites) let the lease lapse under its holder, and its release failed.
var holdOpts = lock.Options{TTL: time.Minute, Wait: safeOpts.Wait, Retry: safeOpts.Retry}

func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	if ch == nil {
		t.Fatalf("%s: no channel", what)
	}
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: still running after %s", what, d)
	}
}

func TestSafeRungsExactUnderContention(t *testing.T) {
	t.Parallel() // its own Redis and masters, and no bound in time
	rdb, _ := redistest.Start(t)
	clients, _ := redistest.StartMasters(t, 3)
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Retry: lock.FixedSleep(time.Millisecond)}
	for _, tc := range []struct {
		name   string
		rdb    *redis.Client
		locker lock.Locker
	}{
		{"reentrant", rdb, lock.NewReentrant(rdb, o)},
		{"redlock", clients[0], speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(clients), o, lock.RedlockOptions{}))},
		{"fenced", rdb, lock.NewFenced(rdb, o)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			contend(t, tc.rdb, tc.locker, lock.Call{}, "n:"+tc.name, 10, 20)
		})
	}
}
