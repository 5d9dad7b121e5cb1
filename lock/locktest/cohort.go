package locktest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// FairOpts are fair's (and a cohort's) test options: a lease long enough
// to outlive each test's waits, so that only a release moves the lock.
func FairOpts(n lock.Notifier) lock.Options {
	return lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second, Notifier: n}
}

// Queued waits until key's fair queue holds n waiters and returns them.
func Queued(t *testing.T, rdb *redis.Client, key string, n int) []string {
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

// TokenOf is a held lock's fencing token.
func TokenOf(t *testing.T, l lock.Lock) int64 {
	t.Helper()
	tl, ok := l.(lock.Tokened)
	if !ok {
		t.Fatalf("%T is not Tokened", l)
	}
	return tl.Token()
}

// Dotted is a cohort token as global.section.
func Dotted(tok int64) string {
	return strconv.FormatInt(tok>>20, 10) + "." + strconv.FormatInt(tok&(1<<20-1), 10)
}

// DottedAll is the held locks' tokens as global.section.
func DottedAll(t *testing.T, held []lock.Lock) []string {
	t.Helper()
	var toks []string
	for _, l := range held {
		toks = append(toks, Dotted(TokenOf(t, l)))
	}
	return toks
}

// PassAlong takes key on c, lines up n more requests behind it in order,
// then runs each section in turn (section may be nil) and releases it, so
// that the next in line gets the lock. It returns the n+1 locks held, in
// order; the last is still held.
func PassAlong(t *testing.T, c lock.Locker, key string, n int, section func(i int, l lock.Lock)) []lock.Lock {
	t.Helper()
	ctx := context.Background()
	first, err := c.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	held := []lock.Lock{first}
	var waits []<-chan Obtained
	for range n {
		waits = append(waits, ObtainAsync(ctx, c, key))
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

// RoundTrips is a go-redis hook that counts round trips: one per command
// sent on its own, one per pipeline (N).
type RoundTrips struct{ N atomic.Int64 }

func (r *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.N.Add(1); return next(ctx, cmd) }
}
func (r *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.N.Add(1); return next(ctx, cmds) }
}
