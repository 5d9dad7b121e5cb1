package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
)

// TestEtcdExcludesAndFences: the etcd Mutex is exact under contention,
// refuses at once with try=0, gives up at its bound, and every holder's
// fencing token (its key's create revision) is above the one before.
func TestEtcdExcludesAndFences(t *testing.T) {
	rdb, _ := redistest.Start(t)
	cli := servertest.Etcd(t)
	// The Lockers' own bound is an hour: contenders wait as long as it
	// takes, and a try that ignored its bound would not give up.
	o := lock.Options{TTL: 2 * time.Second, Wait: time.Hour}
	a, b := lock.NewEtcd(cli, o), lock.NewEtcd(cli, o)
	contend(t, rdb, locktest.Alternate{a, b}, lock.Call{}, "n:etcd", 10, 20)

	ctx := context.Background()
	var last int64
	for i := range 4 {
		l, err := []lock.Locker{a, b}[i%2].Obtain(ctx, "lock:k", lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		tok := l.(lock.Tokened).Token()
		if tok <= last {
			t.Fatalf("holder %d: token %d after %d: fencing tokens must grow", i, tok, last)
		}
		last = tok
		if i < 3 {
			l.Release(ctx)
			continue
		}
		locktest.Refuses(t, b, "lock:k", 100*time.Millisecond, o.Wait)
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("a second release: %v, want ErrNotHeld", err)
		}
	}
}

// TestEtcdLostLeaseFreesTheLock: the holder's lease ends (its process was
// paused or died: keepalives stopped); its key goes with it, the waiter
// gets the lock with a higher token, and the old holder's release says it
// no longer held it.
func TestEtcdLostLeaseFreesTheLock(t *testing.T) {
	cli := servertest.Etcd(t)
	ctx := context.Background()
	o := lock.Options{TTL: time.Second, Wait: 10 * time.Second}
	old, err := lock.NewEtcd(cli, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	lock.RevokeEtcdLease(t, old) // as if its keepalives had stopped for the lease's life
	l, err := lock.NewEtcd(cli, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(2 * time.Second)})
	if err != nil {
		t.Fatalf("the waiter after the holder's lease ended: %v", err)
	}
	if l.(lock.Tokened).Token() <= old.(lock.Tokened).Token() {
		t.Fatal("the new holder's token is not above the lost holder's")
	}
	if err := old.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the lost holder's release: %v, want ErrNotHeld", err)
	}
	l.Release(ctx)
}

// TestEtcdWaiterBehindOneThatGivesUp: C waits behind B, who waits behind
// the holder A; B gives up and deletes its key. C must go on waiting for
// A, not take B's deletion for its turn, and get the lock once A releases.
func TestEtcdWaiterBehindOneThatGivesUp(t *testing.T) {
	cli := servertest.Etcd(t)
	ctx := context.Background()
	o := lock.Options{TTL: 2 * time.Second, Wait: 10 * time.Second}
	a, err := lock.NewEtcd(cli, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	bErr := make(chan error, 1)
	go func() {
		_, err := lock.NewEtcd(cli, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(300 * time.Millisecond)})
		bErr <- err
	}()
	time.Sleep(100 * time.Millisecond) // B is in line
	type got struct {
		l   lock.Lock
		err error
		at  time.Time
	}
	cGot := make(chan got, 1)
	go func() {
		l, err := lock.NewEtcd(cli, o).Obtain(ctx, "lock:k", lock.Call{})
		cGot <- got{l, err, time.Now()}
	}()
	if err := <-bErr; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B: %v, want ErrNotObtained after its 300ms", err)
	}
	select {
	case g := <-cGot:
		t.Fatalf("C got the lock (%v) while A still held it: it took B's leaving for its turn", g.err)
	case <-time.After(300 * time.Millisecond):
	}
	released := time.Now()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g := <-cGot
	if g.err != nil {
		t.Fatalf("C after A released: %v", g.err)
	}
	if g.l.(lock.Tokened).Token() <= a.(lock.Tokened).Token() {
		t.Fatal("C's token is not above A's")
	}
	t.Logf("C held the lock %s after A's release", g.at.Sub(released).Round(time.Millisecond))
	g.l.Release(ctx)
}

// BenchmarkEtcdHandoff: three processes' lockers (30 waiters each) take
// turns at one etcd lock with an empty section; handoffs/s is how fast
// the lock passes from a release to the next holder, and slow/op the
// share of handoffs that took over 5 ms (a waiter hearing its release
// late). MEASUREMENTS.md has its figures with a watch per waiter and
// with the watch kept open per lock.
func BenchmarkEtcdHandoff(b *testing.B) {
	cli := servertest.Etcd(b)
	o := lock.Options{Wait: 30 * time.Second}
	lockers := []lock.Locker{lock.NewEtcd(cli, o), lock.NewEtcd(cli, o), lock.NewEtcd(cli, o)}
	ctx := context.Background()
	var (
		mu      sync.Mutex
		lastRel time.Time
		slow    int
		n       atomic.Int64
	)
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, l := range lockers {
		for range 30 {
			wg.Go(func() {
				for n.Add(1) <= int64(b.N) {
					h, err := l.Obtain(ctx, "lock:bench", lock.Call{})
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					if !lastRel.IsZero() && time.Since(lastRel) > 5*time.Millisecond {
						slow++
					}
					lastRel = time.Now()
					mu.Unlock()
					if err := h.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handoffs/s")
	b.ReportMetric(float64(slow)/float64(b.N), "slow/op")
}
