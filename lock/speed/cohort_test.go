package speed_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// piped is a held Cohort section's pipe.
func piped(t *testing.T, l lock.Lock) lock.Piped {
	t.Helper()
	p, ok := l.(lock.Piped)
	if !ok {
		t.Fatalf("%T is not Piped", l)
	}
	return p
}

// getVia reads key down p: the GET goes out at once.
func getVia(p lock.Piped, rdb redis.Cmdable, key string) (int64, error) {
	var n int64
	err := p.Send(rdb, func(pl redis.Pipeliner) func() error {
		get := pl.Get(context.Background(), key)
		return func() (err error) {
			if n, err = get.Int64(); errors.Is(err, redis.Nil) {
				err = nil
			}
			return err
		}
	}, false)()
	return n, err
}

// setLater queues SET key v down p, to go out with the next command.
func setLater(p lock.Piped, rdb redis.Cmdable, key string, v int64) func() error {
	return p.Send(rdb, func(pl redis.Pipeliner) func() error {
		return pl.Set(context.Background(), key, v, 0).Err
	}, true)
}

// A section queues its write and passes the lock on: the write has not
// gone out; it goes in one round trip with the next section's read, which
// sees it; the last section's write goes in one round trip with the
// release to Redis, after which another process reads it.
func TestCohortWriteRidesWithTheNextRead(t *testing.T) {
	rdb, _ := redistest.Start(t)
	other := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr}) // uncounted
	t.Cleanup(func() { other.Close() })
	rt := &locktest.RoundTrips{}
	rdb.AddHook(rt)
	c, _ := cohortOn(t, rdb, 0)
	ctx := context.Background()
	const key, data = "lock:pipe", "n:pipe"

	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	second := locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond) // waiting in the line
	if n, err := getVia(piped(t, first), rdb, data); err != nil || n != 0 {
		t.Fatalf("first read %d, %v; want 0", n, err)
	}
	landed := setLater(piped(t, first), rdb, data, 1)
	before := rt.N.Load()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if d := rt.N.Load() - before; d != 0 {
		t.Fatalf("%d round trips to pass the lock, want 0", d)
	}
	if other.Exists(ctx, data).Val() != 0 {
		t.Fatal("the write went out before the next section's read: they cannot share a round trip")
	}
	before = rt.N.Load()
	n, err := getVia(piped(t, got.L), rdb, data)
	if err != nil || n != 1 {
		t.Fatalf("the next section read %d, %v; want 1, the write queued before it", n, err)
	}
	if d := rt.N.Load() - before; d != 1 {
		t.Errorf("the write and the next read took %d round trips, want 1", d)
	}
	if err := landed(); err != nil {
		t.Fatalf("the first write: %v", err)
	}

	landed = setLater(piped(t, got.L), rdb, data, 2)
	before = rt.N.Load()
	if err := got.L.Release(ctx); err != nil { // nobody waits: back to Redis
		t.Fatal(err)
	}
	if d := rt.N.Load() - before; d != 1 {
		t.Errorf("the last write and the release took %d round trips, want 1", d)
	}
	if err := landed(); err != nil {
		t.Fatalf("the last write: %v", err)
	}
	if v, _ := other.Get(ctx, data).Int64(); v != 2 {
		t.Fatalf("after the release another client reads %d, want 2", v)
	}
	if other.Exists(ctx, key).Val() != 0 {
		t.Fatal("the lock is still held in Redis after the release")
	}
}

// A write queued to go out with the next section's command goes out on
// its own when the next section sends nothing: its request is not held
// up by the one after it.
func TestCohortParkedWriteGoesAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	c, _ := cohortOn(t, rdb, 0)
	ctx := context.Background()
	const key, data = "lock:park", "n:park"
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	second := locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond)
	landed := setLater(piped(t, first), rdb, data, 7)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	defer got.L.Release(ctx)
	start := time.Now()
	if err := landed(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the write waited %s for a next command that never came", d)
	}
	if v, _ := rdb.Get(ctx, data).Int64(); v != 7 {
		t.Fatalf("%s = %d after the write landed, want 7", data, v)
	}
}

// Two processes sell and count through the inventory's piped operations,
// each section passing the lock on before its write has landed: nothing
// lost, nothing sold twice, every sale answered was made, and most
// sections were passed in memory.
func TestCohortPipedExactAcrossProcesses(t *testing.T) {
	sellAndCountAcross(t, func(rdb *redis.Client, o lock.Options) lock.Locker { return speed.NewCohort(rdb, o, 8) },
		func(l lock.Lock) inventory.Guard { return inventory.Guard{Pipe: piped(t, l)} })
}

// sellAndCountAcross runs two processes (two lockers from newLocker on one
// Redis), ten workers each, every worker ten times counting one (num) and
// selling one (stock 150) under the Guard guard makes of its lock (with
// the lock's token); the section releases once its write is queued,
// before it waits for it to land.
// Nothing may be lost, nothing sold twice, every sale answered must have
// been made, and some sections must have been passed in memory.
func sellAndCountAcross(t *testing.T, newLocker func(*redis.Client, lock.Options) lock.Locker,
	guard func(l lock.Lock) inventory.Guard) {
	t.Helper()
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, notify.Options{})
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n}
	procs := []lock.Locker{newLocker(rdb, o), newLocker(rdb, o)}
	ctx := context.Background()
	s := inventory.New(rdb)
	const stock, workers, each = 150, 10, 10
	if err := s.Reset(ctx, stock); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		sold int64
		wg   sync.WaitGroup
	)
	for p := range procs {
		for range workers {
			wg.Go(func() {
				for range each {
					for _, sell := range []bool{false, true} {
						key := inventory.NumLock
						if sell {
							key = inventory.StockLock
						}
						l, err := procs[p].Obtain(ctx, key, lock.Call{})
						if err != nil {
							t.Error(err)
							return
						}
						release := func() {
							if rerr := l.Release(ctx); rerr != nil {
								t.Error(rerr)
							}
						}
						g := guard(l)
						g.Token = locktest.TokenOf(t, l)
						released := false
						g.Queued = func() { released = true; release() }
						if sell {
							_, err = s.Sell(ctx, g)
						} else {
							_, err = s.Incr(ctx, g)
						}
						if !released {
							release()
						}
						mu.Lock()
						switch {
						case err == nil && sell:
							sold++
						case err != nil && !errors.Is(err, inventory.ErrSoldOut):
							t.Errorf("%s: %v", key, err)
						}
						mu.Unlock()
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

// Another process waiting in Redis gets the lock after at most a bound's
// worth of this process's sections, however many of them wait: whether
// the sections send nothing to Redis, or read down the pipe (then past the
// bound they ask who waits in Redis, and the answer names the other).
func TestCohortBoundsTheOtherProcessesWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads bool
	}{{"silent sections", false}, {"sections that read", true}} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, _ := redistest.Start(t)
			a, o := cohortOn(t, rdb, 2)
			b := speed.NewCohort(rdb, o, 2)
			ctx := context.Background()
			const key = "lock:turns"
			section := func(l lock.Lock) {
				if tc.reads {
					if _, err := getVia(piped(t, l), rdb, "n:turns"); err != nil {
						t.Error(err)
					}
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
			var (
				mu    sync.Mutex
				order []string
			)
			run := func(c *lock.Cohort, name string) {
				l, err := c.Obtain(ctx, key, lock.Call{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				section(l)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
			first, err := a.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 5 {
				wg.Go(func() { run(a, "a") })
			}
			time.Sleep(50 * time.Millisecond) // a's line is full
			wg.Go(func() { run(b, "b") })
			locktest.Queued(t, rdb, key, 1) // b's head waits in Redis
			mu.Lock()
			order = append(order, "a")
			mu.Unlock()
			section(first)
			first.Release(ctx)
			wg.Wait()
			if i := slices.Index(order, "b"); i < 0 || i > 2 {
				t.Errorf("sections in order %v: b should come after a's cohort of 2", order)
			}
		})
	}
}

// Nobody else waits in Redis: the cohort goes on past its bound, each
// pass past it on a fresh answer from a pipeline; a section that sends
// nothing brings no answer, and the lock goes back to Redis after it.
func TestCohortGoesOnPastTheBoundAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	c, _ := cohortOn(t, rdb, 2)
	ctx := context.Background()
	const key = "lock:alone"
	held := locktest.PassAlong(t, c, key, 5, func(i int, l lock.Lock) {
		if i != 4 { // the fifth section reads nothing
			if _, err := getVia(piped(t, l), rdb, "n:alone"); err != nil {
				t.Fatal(err)
			}
		}
	})
	toks := locktest.DottedAll(t, held)
	if want := []string{"1.1", "1.2", "1.3", "1.4", "1.5", "2.1"}; !slices.Equal(toks, want) {
		t.Errorf("sections' tokens (global.section) %v, want %v: past the bound of 2 while alone, then back to Redis after the section that asked nothing", toks, want)
	}
	if err := held[len(held)-1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if g, _ := rdb.Get(ctx, lock.FenceKey(key)).Int64(); g != 2 {
		t.Errorf("%d global acquisitions, want 2", g)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Error("the lock is still in Redis after the last release")
	}
}
