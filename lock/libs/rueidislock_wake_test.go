package libs_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
	"github.com/lockladder/lockladder/stack/faultproxy"
)

// Why the rung runs rueidislock with DisableCache (rueidislock.go).
// With client-side caching, as its README shows it (NoLoopTracking), a
// waiter sleeps until an invalidation of the lock's key or a local
// release wakes it. An attempt whose reply is later than TryNextAfter
// (20ms: the library's own bound on an attempt) may have set the key on
// the server: the library then deletes it, from the same connection, and
// NOLOOP tracking sends no invalidation to the connection that wrote, and
// nothing wakes the waiter. The lock is free and every waiter of that
// process sleeps until another process touches the key, or its bound.
// Without NOLOOP the holder's own extension invalidates its own key, and
// the invalidation triggers the next extension: it extends in a loop.

// rueidisWaiter stages the lost wake-up through a proxy that delays
// Redis's replies: H holds "k"; W waits; replies are delayed past
// TryNextAfter; H releases, which wakes W, whose attempt sets the key and
// times out, and deletes it; the delay ends. obtain starts W and
// returns a channel that yields once W holds the lock.
func rueidisWaiter(t *testing.T, hold func(ctx context.Context) (release func()), obtain func(ctx context.Context) <-chan struct{}, rdb *redis.Client, p *faultproxy.Proxy, mustTry bool) (free time.Time, got <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	release := hold(ctx)
	base := scriptCalls(t, rdb)
	got = obtain(ctx)
	// W has tried once (and failed: H holds it), and had its answer: a
	// loopback round trip, with a wide margin for a loaded machine.
	untilScripts(t, rdb, base+1)
	time.Sleep(100 * time.Millisecond)
	p.SetLatency(200 * time.Millisecond)
	base = scriptCalls(t, rdb)
	release() // returns once H's delete is answered
	// H's delete, W's attempt (which sets the key: it is free) and W's
	// delete of it: the key gone again. With caching on (mustTry false),
	// W may never make that attempt: then H's release woke nothing at all,
	// the same flaw reached another way, and W sleeps with the lock free.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		n, err := rdb.Exists(ctx, "rueidislock:0:k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if scriptCalls(t, rdb) >= base+3 && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			if !mustTry && n == 0 {
				t.Logf("in 10s W made no attempt after H's release: it slept through it")
				break
			}
			t.Fatalf("in 10s the server ran %d scripts since the delay began (want 3), the key exists: %d", scriptCalls(t, rdb)-base, n)
		}
	}
	p.SetLatency(0)
	return time.Now(), got
}

// scriptCalls is how many scripts the server ran (EVAL and EVALSHA, not
// counting the EVALSHAs it refused for a script it did not have yet).
func scriptCalls(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_eval:") && !strings.HasPrefix(line, "cmdstat_evalsha:") {
			continue
		}
		_, stats, _ := strings.Cut(strings.TrimSpace(line), ":")
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			x, _ := strconv.Atoi(v)
			switch k {
			case "calls":
				n += x
			case "failed_calls":
				n -= x
			}
		}
	}
	return n
}

func untilScripts(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); scriptCalls(t, rdb) < n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server ran %d scripts in 10s, want %d", scriptCalls(t, rdb), n)
		}
	}
}

func proxied(t *testing.T) (*redis.Client, *faultproxy.Proxy) {
	t.Helper()
	redistest.NeedServer(t, "redis-server")
	rdb, addr := redistest.Start(t)
	p, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return rdb, p
}

// TestLibRueidislockLosesAWakeUpWithCaching: the library as its README
// shows it (client-side caching, NoLoopTracking): W sleeps with the lock
// free. Should a later rueidis not lose it, this fails: the rung's
// DisableCache can then go.
func TestLibRueidislockLosesAWakeUpWithCaching(t *testing.T) {
	rdb, p := proxied(t)
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{p.Addr()}},
		KeyMajority:  1, NoLoopTracking: true, KeyValidity: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	free, got := rueidisWaiter(t,
		func(ctx context.Context) func() {
			_, cancel, err := l.WithContext(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			return cancel
		},
		func(context.Context) <-chan struct{} {
			got := make(chan struct{})
			go func() {
				if _, cancel, err := l.WithContext(wctx, "k"); err == nil {
					close(got)
					cancel()
				}
			}()
			return got
		}, rdb, p, false)
	if n, err := rdb.Exists(context.Background(), "rueidislock:0:k").Result(); err != nil || n != 0 {
		t.Fatalf("the lock's key: exists %d (%v), want it free", n, err)
	}
	select {
	case <-got:
		t.Fatalf("W got the lock %s after it was free: the library no longer loses this wake-up", time.Since(free))
	case <-time.After(2 * time.Second):
		t.Logf("W still waits 2s after the lock was free, as expected")
	}
}

// TestLibRueidislockWakesWithoutCaching: the rung (DisableCache) in the
// same staging: W gets the lock once the delay ends.
func TestLibRueidislockWakesWithoutCaching(t *testing.T) {
	rdb, p := proxied(t)
	via := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer via.Close()
	opt, err := libs.RueidisOption(via)
	if err != nil {
		t.Fatal(err)
	}
	l := libs.NewRueidislock(opt, lock.Options{TTL: 5 * time.Second, Wait: 30 * time.Second})
	free, got := rueidisWaiter(t,
		func(ctx context.Context) func() {
			h, err := l.Obtain(ctx, "k", lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			return func() { h.Release(ctx) }
		},
		func(ctx context.Context) <-chan struct{} {
			got := make(chan struct{})
			go func() {
				if w, err := l.Obtain(ctx, "k", lock.Call{}); err == nil {
					close(got)
					w.Release(ctx)
				}
			}()
			return got
		}, rdb, p, true)
	select {
	case <-got:
		t.Logf("W got the lock %s after it was free", time.Since(free))
	case <-time.After(10 * time.Second):
		t.Fatal("W still waits 10s after the lock was free")
	}
}

// TestLibRueidislockWithoutNoLoopExtendsInALoop: why NoLoopTracking off is
// no remedy: a holder's extension invalidates its own key, which
// triggers the next extension. Held for a second with a 200ms validity
// (an extension every 100ms), it ran hundreds of scripts, not ten.
func TestLibRueidislockWithoutNoLoopExtendsInALoop(t *testing.T) {
	redistest.NeedServer(t, "redis-server")
	rdb, addr := redistest.Start(t)
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:  1, KeyValidity: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, cancel, err := l.WithContext(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	base := scriptCalls(t, rdb)
	time.Sleep(time.Second)
	n := scriptCalls(t, rdb) - base
	cancel()
	if n < 100 {
		t.Fatalf("%d scripts in a second held: no loop", n)
	}
	t.Logf("%d scripts in a second held (an extension every 100ms would be 10)", n)
}
