package lock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// carrier is a held lock's Carrier, or a test failure.
func carrier(t *testing.T, l lock.Lock) lock.Carrier {
	t.Helper()
	c, ok := l.(lock.Carrier)
	if !ok {
		t.Fatalf("%T is not a Carrier", l)
	}
	return c
}

// A value carried by one section reaches the next section of the same
// cohort (passed in memory) and no further: a section that takes the lock
// in Redis, after the bound, carries nothing and must read. A Carry after
// Release records nothing, and the release never rides a pipeline (a
// refused compare-and-set must be able to try again under the lock).
func TestCohortCarryCarriesWithinACohortOnly(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := fairOpts(notifier(t, rdb, lock.NotifierOptions{}))
	c := lock.NewCohortCarry(rdb, o, 2)
	ctx := context.Background()
	const key, data = "lock:carry", "n:carry"
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.(lock.PipelineReleaser); ok {
		t.Error("a carrying section releases in the pipeline of its write")
	}
	if _, ok := carrier(t, first).Carried(data); ok {
		t.Fatal("the cohort's first section carries a value it never read")
	}
	carrier(t, first).Carry(data, 7)
	second := obtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond) // in this order
	third := obtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	carrier(t, first).Carry(data, 99) // too late: not its lock any more
	got := <-second
	if got.err != nil {
		t.Fatal(got.err)
	}
	if v, ok := carrier(t, got.l).Carried(data); !ok || v != 7 {
		t.Fatalf("the section passed in memory carries %d, %v; want 7", v, ok)
	}
	carrier(t, got.l).Carry(data, 8)
	if err := got.l.Release(ctx); err != nil { // the bound: back to Redis
		t.Fatal(err)
	}
	got = <-third
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer got.l.Release(ctx)
	if g := tokenOf(t, got.l) >> 20; g != 2 {
		t.Fatalf("the third section's global token %d, want 2 (taken in Redis)", g)
	}
	if v, ok := carrier(t, got.l).Carried(data); ok {
		t.Errorf("a section taken in Redis carries %d: another instance may have written since", v)
	}
}

// Two processes, each with its line and its carried values, sell and
// count through the inventory's carried operations: nothing lost, nothing
// sold twice, although most sections never read.
func TestCohortCarryExactAcrossProcesses(t *testing.T) {
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, lock.NotifierOptions{})
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n}
	procs := []*lock.CohortCarry{lock.NewCohortCarry(rdb, o, 8), lock.NewCohortCarry(rdb, o, 8)}
	ctx := context.Background()
	s := inventory.New(rdb)
	const stock, workers, each = 150, 10, 10
	if err := s.Reset(ctx, stock); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		sold  int64
		wg    sync.WaitGroup
		stale int
	)
	for p := range procs {
		for range workers {
			wg.Go(func() {
				for range each {
					for _, op := range []struct {
						lockKey, fence string
						run            func(int64, inventory.Carry) (int64, error)
					}{
						{inventory.NumLock, inventory.NumFence, func(tok int64, c inventory.Carry) (int64, error) {
							return s.IncrCarried(ctx, inventory.NumFence, tok, c)
						}},
						{inventory.StockLock, inventory.StockFence, func(tok int64, c inventory.Carry) (int64, error) {
							return s.SellCarried(ctx, inventory.StockFence, tok, c)
						}},
					} {
						l, err := procs[p].Obtain(ctx, op.lockKey, lock.Call{})
						if err != nil {
							t.Error(err)
							return
						}
						_, err = op.run(tokenOf(t, l), carrier(t, l))
						mu.Lock()
						switch {
						case err == nil && op.lockKey == inventory.StockLock:
							sold++
						case err != nil && err != inventory.ErrSoldOut:
							stale++
							t.Errorf("%s: %v", op.lockKey, err)
						}
						mu.Unlock()
						if err := l.Release(ctx); err != nil {
							t.Error(err)
						}
					}
				}
			})
		}
	}
	wg.Wait()
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(procs) * workers * each)
	if snap.Num != want {
		t.Errorf("num %d after %d increments: %d lost", snap.Num, want, want-snap.Num)
	}
	if sold != stock || snap.Stock != 0 || snap.Sold != stock {
		t.Errorf("%d sales answered, stock left %d, sold counter %d; want %d, 0, %d", sold, snap.Stock, snap.Sold, stock, stock)
	}
	if g, _ := rdb.Get(ctx, lock.FenceKey(inventory.NumLock)).Int64(); g <= 0 || g >= want {
		t.Errorf("%d global acquisitions for %d increments: want some, and fewer", g, want)
	}
}
