package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// cohortOn is a Cohort of bound sections (0: the default) over rdb, with
// fair's test options and a notifier; NewCohort for another process on
// the same Redis takes the options it returns.
func cohortOn(t *testing.T, rdb *redis.Client, bound int) (*lock.Cohort, lock.Options) {
	t.Helper()
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	return lock.NewCohort(rdb, o, bound), o
}

// Two processes (two Cohorts: each its own lines) on one Redis, ten
// requests each, every one a GET and SET of a counter under the lock:
// nothing lost, and the sections' fencing tokens grow strictly in the
// order the sections ran, across both processes; some sections were
// passed in memory (fewer tokens from Redis than sections).
func TestCohortExactAcrossProcesses(t *testing.T) {
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, notify.Options{})
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n}
	procs := []*lock.Cohort{lock.NewCohort(rdb, o, 0), lock.NewCohort(rdb, o, 0)}
	ctx := context.Background()
	const key, counter, workers, each = "lock:cohort", "n:cohort", 10, 20
	var (
		mu     sync.Mutex
		tokens []int64
	)
	var wg sync.WaitGroup
	for p := range procs {
		for range workers {
			wg.Go(func() {
				for range each {
					l, err := procs[p].Obtain(ctx, key, lock.Call{})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					tokens = append(tokens, locktest.TokenOf(t, l))
					mu.Unlock()
					v, _ := rdb.Get(ctx, counter).Int64()
					rdb.Set(ctx, counter, v+1, 0)
					if err := l.Release(ctx); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	want := int64(len(procs) * workers * each)
	if got, _ := rdb.Get(ctx, counter).Int64(); got != want {
		t.Fatalf("counter %d after %d increments: %d lost", got, want, want-got)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("section %d's token %d after %d: tokens must grow strictly", i, tokens[i], tokens[i-1])
		}
	}
	global, _ := rdb.Get(ctx, lock.FenceKey(key)).Int64()
	if global <= 0 || global >= want {
		t.Errorf("%d tokens from Redis for %d sections: want some, and fewer (sections passed in memory)", global, want)
	}
	t.Logf("%d sections, %d global acquisitions", want, global)
}

// A section ends with waiters in its own process: the next one gets the
// lock in memory, under the same global token (Redis's token counter does
// not move), with the next section number; past the bound, the lock goes
// back to Redis and the next section has a new global token.
func TestCohortPassesInMemoryUpToTheBound(t *testing.T) {
	rdb, _ := redistest.Start(t)
	c, _ := cohortOn(t, rdb, 3)
	ctx := context.Background()
	const key = "lock:bound"
	held := locktest.PassAlong(t, c, key, 4, nil)
	toks := locktest.DottedAll(t, held)
	if want := []string{"1.1", "1.2", "1.3", "2.1", "2.2"}; !slices.Equal(toks, want) {
		t.Errorf("sections' tokens (global.section) %v, want %v", toks, want)
	}
	if err := held[len(held)-1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := held[0].Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("a second Release: %v, want ErrNotHeld", err)
	}
	if g, _ := rdb.Get(ctx, lock.FenceKey(key)).Int64(); g != 2 {
		t.Errorf("%d global acquisitions, want 2", g)
	}
	if rdb.Exists(ctx, key).Val() != 0 {
		t.Error("the lock is still in Redis after the last release")
	}
}

// A waiter whose bound passes in the line gives up (ErrNotObtained), and
// the line goes on; try=0 on a line this process holds is ErrBusy at once.
func TestCohortWaitBound(t *testing.T) {
	rdb, _ := redistest.Start(t)
	c, _ := cohortOn(t, rdb, 0)
	ctx := context.Background()
	const key = "lock:bounded"
	held, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	short := 50 * time.Millisecond
	start := time.Now()
	// Sooner than the Locker's own bound (fairOpts' Wait): the call's.
	if _, err := c.Obtain(ctx, key, lock.Call{Try: &short}); !errors.Is(err, lock.ErrNotObtained) || time.Since(start) >= locktest.FairOpts(nil).Wait {
		t.Errorf("a waiter with a 50ms bound: %v after %s, want ErrNotObtained before the Locker's bound", err, time.Since(start))
	}
	zero := time.Duration(0)
	if _, err := c.Obtain(ctx, key, lock.Call{Try: &zero}); !errors.Is(err, lock.ErrBusy) {
		t.Errorf("try=0 on a held line: %v, want ErrBusy", err)
	}
	next := locktest.ObtainAsync(ctx, c, key)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-next
	if got.Err != nil {
		t.Fatalf("the waiter after the one that gave up: %v", got.Err)
	}
	if err := got.L.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A cohort whose lease was found lost (its watchdog's renewal saw another
// value) does not pass the lock on: the next section takes it in Redis,
// with a new global token.
func TestCohortDoesNotPassALostLease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	n := notifier(t, rdb, notify.Options{})
	c := lock.NewCohort(rdb, lock.Options{TTL: 300 * time.Millisecond, Wait: 5 * time.Second, Notifier: n}, 0)
	ctx := context.Background()
	const key = "lock:lost"
	held, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next := locktest.ObtainAsync(ctx, c, key)
	time.Sleep(20 * time.Millisecond)
	rdb.Set(ctx, key, "someone-else", 0) // the lease is gone
	time.Sleep(250 * time.Millisecond)   // a renewal or two see it
	rdb.Del(ctx, key)
	held.Release(ctx)
	got := <-next
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	defer got.L.Release(ctx)
	if g := locktest.TokenOf(t, got.L) >> 20; g != 2 {
		t.Errorf("the section after a lost lease has global token %d, want 2 (taken in Redis, not passed)", g)
	}
}

// A cohort keeps the lock for half a lease on the lock's own clock
// (Options.Clock, which the explorer runs on virtual time): past it, the
// next section takes the lock in Redis, though the bound is far.
func TestCohortSharesHalfALeaseOnItsClock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	var mu sync.Mutex
	now := time.Now()
	o.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := lock.NewCohort(rdb, o, 0)
	const key = "lock:share"
	held := locktest.PassAlong(t, c, key, 3, func(i int, _ lock.Lock) {
		if i == 1 { // the second section outlives half a lease
			mu.Lock()
			now = now.Add(o.TTL/2 + time.Millisecond)
			mu.Unlock()
		}
	})
	toks := locktest.DottedAll(t, held)
	if want := []string{"1.1", "1.2", "2.1", "2.2"}; !slices.Equal(toks, want) {
		t.Errorf("sections' tokens (global.section) %v, want %v: back to Redis after the section that outlived half a lease", toks, want)
	}
	if err := held[len(held)-1].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCohortWaiting counts the requests in a process's line: not the
// holder, one while a second request waits, none once it was passed the
// lock.
func TestCohortWaiting(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	c, _ := cohortOn(t, rdb, 0)
	held, err := c.Obtain(ctx, "lock:w", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Waiting("lock:w"); n != 0 {
		t.Fatalf("Waiting with only the holder: %d", n)
	}
	got := make(chan lock.Lock, 1)
	go func() {
		l, err := c.Obtain(ctx, "lock:w", lock.Call{})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.Waiting("lock:w") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second request never showed in the line")
		}
		time.Sleep(time.Millisecond)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next := <-got
	if n := c.Waiting("lock:w"); n != 0 {
		t.Errorf("Waiting once passed the lock: %d", n)
	}
	if next != nil {
		if err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// spoiledLine is a cohort line's speed that refuses every pass, as
// package speed's pipe does once a command of the cohort failed, and
// counts the lock's returns to Redis through it.
type spoiledLine struct{ gaveBack atomic.Int64 }

func (*spoiledLine) Restart()          {}
func (*spoiledLine) AtBound(bool)      {}
func (*spoiledLine) MayPass(bool) bool { return false }
func (*spoiledLine) Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, _ bool) func() error {
	return func() error { return errors.New("not sent") }
}
func (s *spoiledLine) GiveBack(ctx context.Context, held lock.Lock) error {
	s.gaveBack.Add(1)
	return held.Release(ctx)
}

// A line whose speed refuses the pass (a spoiled cohort) never passes
// the lock in memory, though its waiters are within the bound: every
// section gives it back to Redis through the line, and the next takes it
// there under a new global token.
func TestCohortPassesOnlyWhenItsLineMay(t *testing.T) {
	rdb, _ := redistest.Start(t)
	line := &spoiledLine{}
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	c := lock.NewCohortWith(rdb, o, 0, func(string) lock.CohortLine { return line })
	held := locktest.PassAlong(t, c, "lock:spoiled", 2, nil)
	if toks, want := locktest.DottedAll(t, held), []string{"1.1", "2.1", "3.1"}; !slices.Equal(toks, want) {
		t.Errorf("sections' tokens (global.section) %v, want %v: no pass from a spoiled line", toks, want)
	}
	if n := line.gaveBack.Load(); n != 2 {
		t.Errorf("%d returns to Redis through the line, want 2", n)
	}
	held[len(held)-1].Release(context.Background())
}
