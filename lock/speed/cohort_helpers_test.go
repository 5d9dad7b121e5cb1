package speed_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// The cohort tests' helpers, as package lock's tests have them for the
// cohort without its speed.

var notifier = locktest.Notifier

// cohortOn is a Cohort of bound sections (0: the default) over rdb, with
// fair's test options and a notifier; speed.NewCohort for another process on
// the same Redis takes the options it returns.
func cohortOn(t *testing.T, rdb *redis.Client, bound int) (*lock.Cohort, lock.Options) {
	t.Helper()
	o := fairOpts(notifier(t, rdb, notify.Options{}))
	return speed.NewCohort(rdb, o, bound), o
}

// tokenOf is a held lock's fencing token.
func tokenOf(t *testing.T, l lock.Lock) int64 {
	t.Helper()
	tl, ok := l.(lock.Tokened)
	if !ok {
		t.Fatalf("%T is not Tokened", l)
	}
	return tl.Token()
}

// dotted is a cohort token as global.section.
func dotted(tok int64) string {
	return strconv.FormatInt(tok>>20, 10) + "." + strconv.FormatInt(tok&(1<<20-1), 10)
}

// passAlong takes key on c, lines up n more requests behind it in order,
// then runs each section in turn (section may be nil) and releases it, so
// that the next in line gets the lock. It returns the n+1 locks held, in
// order; the last is still held.
func passAlong(t *testing.T, c *lock.Cohort, key string, n int, section func(i int, l lock.Lock)) []lock.Lock {
	t.Helper()
	ctx := context.Background()
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	held := []lock.Lock{first}
	var waits []<-chan locktest.Obtained
	for range n {
		waits = append(waits, locktest.ObtainAsync(ctx, c, key))
		time.Sleep(20 * time.Millisecond) // in this order
	}
	for i, w := range waits {
		if section != nil {
			section(i, held[len(held)-1])
		}
		if err := held[len(held)-1].Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-w
		if got.Err != nil {
			t.Fatal(got.Err)
		}
		held = append(held, got.L)
	}
	return held
}

// dottedAll is the held locks' tokens as global.section.
func dottedAll(t *testing.T, held []lock.Lock) []string {
	var toks []string
	for _, l := range held {
		toks = append(toks, dotted(tokenOf(t, l)))
	}
	return toks
}

// fairOpts: a lease long enough to outlive each test's waits, so that
// only a release moves the lock.
func fairOpts(n lock.Notifier) lock.Options {
	return lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second, Notifier: n}
}

// queued waits until key's queue holds n waiters and returns them.
func queued(t *testing.T, rdb *redis.Client, key string, n int) []string {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q := rdb.LRange(ctx, lock.QueueKey(key), 0, -1).Val()
		if len(q) == n {
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue of %s: %v, want %d waiters", key, q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// roundTrips is a go-redis hook that counts round trips: one per command
// sent on its own, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}
