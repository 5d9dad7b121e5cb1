package speed_test

import (
	"context"
	"errors"
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
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	c := speed.NewCohortCarry(rdb, o, 2)
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
	second := locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond) // in this order
	third := locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	carrier(t, first).Carry(data, 99) // too late: not its lock any more
	got := <-second
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if v, ok := carrier(t, got.L).Carried(data); !ok || v != 7 {
		t.Fatalf("the section passed in memory carries %d, %v; want 7", v, ok)
	}
	carrier(t, got.L).Carry(data, 8)
	if err := got.L.Release(ctx); err != nil { // the bound: back to Redis
		t.Fatal(err)
	}
	got = <-third
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	defer got.L.Release(ctx)
	if g := locktest.TokenOf(t, got.L) >> 20; g != 2 {
		t.Fatalf("the third section's global token %d, want 2 (taken in Redis)", g)
	}
	if v, ok := carrier(t, got.L).Carried(data); ok {
		t.Errorf("a section taken in Redis carries %d: another instance may have written since", v)
	}
}

// Two processes, each with its line and its carried values, sell and
// count through the inventory's carried operations, each section
// releasing before its write has landed: nothing lost, nothing sold
// twice, every sale answered was made, although most sections never read
// and never waited for their write.
func TestCohortCarryExactAcrossProcesses(t *testing.T) {
	sellAndCountAcross(t, func(rdb *redis.Client, o lock.Options) lock.Locker { return speed.NewCohortCarry(rdb, o, 8) },
		func(l lock.Lock) inventory.Guard { return inventory.Guard{Carrier: carrier(t, l)} })
}

// setIn is a Commit's write: SET key v, after pausing the pipeline for
// pause (a BLPOP on an empty list), reporting the SET's error.
func setIn(key string, v int64, pause time.Duration) func(redis.Pipeliner) func() error {
	return func(p redis.Pipeliner) func() error {
		ctx := context.Background()
		if pause > 0 {
			p.Do(ctx, "BLPOP", "carry:nothing", pause.Seconds())
		}
		set := p.Set(ctx, key, v, 0)
		return set.Err
	}
}

// A section commits its write and passes the lock on before the write
// lands; the writes land in the order they were queued; and the lock goes
// back to Redis only once the cohort's writes have landed, so the next
// holder from another process reads them.
func TestCohortCarryCommitsInOrderAndReleasesAfterTheWrites(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	a, b := speed.NewCohortCarry(rdb, o, 0), speed.NewCohortCarry(rdb, o, 0)
	ctx := context.Background()
	const key = "lock:commit"
	first, err := a.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	second := locktest.ObtainAsync(ctx, a, key)
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	slow := carrier(t, first).Commit(rdb, setIn("carry:x", 1, 300*time.Millisecond))
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("the next section had the lock after %s: the pass waited for the write", d)
	}
	if rdb.Exists(ctx, "carry:x").Val() != 0 {
		t.Fatal("the first write landed before the pass: the test shows nothing")
	}
	fast := carrier(t, got.L).Commit(rdb, setIn("carry:x", 2, 0))
	other := locktest.ObtainAsync(ctx, b, key) // another process waits in Redis
	locktest.Queued(t, rdb, key, 1)
	if err := got.L.Release(ctx); err != nil { // back to Redis: after the writes
		t.Fatal(err)
	}
	if err := slow(); err != nil {
		t.Fatal(err)
	}
	if err := fast(); err != nil {
		t.Fatal(err)
	}
	o2 := <-other
	if o2.Err != nil {
		t.Fatal(o2.Err)
	}
	defer o2.L.Release(ctx)
	if v, _ := rdb.Get(ctx, "carry:x").Int64(); v != 2 {
		t.Errorf("carry:x = %d when the other process got the lock, want 2: the writes landed out of order, or after the release", v)
	}
}

// A write that does not land spoils the cohort: the sections behind it
// are carried nothing, Settle says so, and the lock is not passed on in
// memory any more (the next section takes it in Redis and reads).
func TestCohortCarryFailedWriteEndsTheCohort(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	c := speed.NewCohortCarry(rdb, o, 0)
	ctx := context.Background()
	const key, data = "lock:spoil", "n:spoil"
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	carrier(t, first).Carry(data, 1)
	rdb.Set(ctx, "carry:not-a-number", "x", 0)
	failing := carrier(t, first).Commit(rdb, func(p redis.Pipeliner) func() error {
		p.Do(ctx, "BLPOP", "carry:nothing", 0.2) // lands after the pass
		cmd := p.Incr(ctx, "carry:not-a-number") // fails: the key holds a string
		return cmd.Err
	})
	second, third := locktest.ObtainAsync(ctx, c, key), (<-chan locktest.Obtained)(nil)
	time.Sleep(20 * time.Millisecond)
	third = locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-second // passed in memory, before the write fails
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if g := locktest.TokenOf(t, got.L) >> 20; g != 1 {
		t.Fatalf("the second section has global token %d, want 1 (passed in memory)", g)
	}
	if err := failing(); err == nil {
		t.Fatal("the failing write landed")
	}
	if err := carrier(t, got.L).Settle(); !errors.Is(err, speed.ErrSpoiled) {
		t.Errorf("Settle after a failed write: %v, want ErrSpoiled", err)
	}
	if v, ok := carrier(t, got.L).Carried(data); ok {
		t.Errorf("carried %d after a write failed", v)
	}
	if err := got.L.Release(ctx); err != nil {
		t.Fatal(err)
	}
	last := <-third
	if last.Err != nil {
		t.Fatal(last.Err)
	}
	defer last.L.Release(ctx)
	if g := locktest.TokenOf(t, last.L) >> 20; g != 2 {
		t.Errorf("the section after a spoiled cohort has global token %d, want 2 (taken in Redis, not passed)", g)
	}
	if err := carrier(t, last.L).Settle(); err != nil {
		t.Errorf("Settle in a fresh cohort: %v", err)
	}
}
