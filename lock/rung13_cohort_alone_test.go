package lock_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// pipedGet sends a GET of key down a held cohort lock's pipe and waits for
// it, as a section's read does.
func pipedGet(t *testing.T, rdb *redis.Client, l lock.Lock, key string) {
	t.Helper()
	p, ok := l.(lock.Piped)
	if !ok {
		t.Fatalf("%T is not Piped", l)
	}
	err := p.Send(rdb, func(pl redis.Pipeliner) func() error {
		cmd := pl.Get(context.Background(), key)
		return func() error {
			if err := cmd.Err(); !errors.Is(err, redis.Nil) {
				return err
			}
			return nil
		}
	}, false)()
	if err != nil {
		t.Fatal(err)
	}
}

// dotted is a cohort token as global.section.
func dotted(tok int64) string {
	return strconv.FormatInt(tok>>20, 10) + "." + strconv.FormatInt(tok&(1<<20-1), 10)
}

// Nobody else waits in Redis: the cohort goes on past its bound, each
// pass past it on a fresh answer from a pipeline; a section that sends
// nothing brings no answer, and the lock goes back to Redis after it.
func TestCohortGoesOnPastTheBoundAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	c, _ := cohortOn(t, rdb, 2)
	ctx := context.Background()
	const key = "lock:alone"
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	held := []lock.Lock{first}
	var waits []<-chan obtained
	for range 5 {
		waits = append(waits, obtainAsync(ctx, c, key))
		time.Sleep(20 * time.Millisecond) // in this order
	}
	for i, w := range waits {
		if i != 4 { // the fifth section reads nothing
			pipedGet(t, rdb, held[len(held)-1], "n:alone")
		}
		if err := held[len(held)-1].Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-w
		if got.err != nil {
			t.Fatal(got.err)
		}
		held = append(held, got.l)
	}
	var toks []string
	for _, l := range held {
		toks = append(toks, dotted(tokenOf(t, l)))
	}
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

// Another process waiting in Redis still gets the lock after a bound's
// worth of this process's sections when they talk to Redis: the answer
// names it, and the cohort ends.
func TestCohortPastTheBoundSeesTheOtherProcess(t *testing.T) {
	rdb, _ := redistest.Start(t)
	a, o := cohortOn(t, rdb, 2)
	b := lock.NewCohort(rdb, o, 2)
	ctx := context.Background()
	const key = "lock:seen"
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
		pipedGet(t, rdb, l, "n:seen")
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
	queued(t, rdb, key, 1) // b's head waits in Redis
	mu.Lock()
	order = append(order, "a")
	mu.Unlock()
	pipedGet(t, rdb, first, "n:seen")
	first.Release(ctx)
	wg.Wait()
	if i := slices.Index(order, "b"); i < 0 || i > 2 {
		t.Errorf("sections in order %v: b should come after a's cohort of 2", order)
	}
}
