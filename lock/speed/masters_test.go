package speed_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed/notify"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// Masters for RedlockLine's tests, as package lock's Redlock tests start
// them: real redis-servers (the embedded stand-in where one is missing
// outside CI), and how many of them hold a key.

// startMasters starts n independent masters, stopped at cleanup.
func startMasters(t testing.TB, n int) ([]*redis.Client, []*redisfam.Server) {
	t.Helper()
	servers := make([]*redisfam.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			servers[i], errs[i] = redisfam.Start(ctx, "127.0.0.1:0", stack.Auto, redistest.CI(), nil)
		})
	}
	wg.Wait()
	clients := make([]*redis.Client, n)
	for i, srv := range servers {
		if errs[i] != nil {
			t.Fatalf("start master %d: %v", i, errs[i])
		}
		t.Cleanup(func() {
			if err := srv.Stop(); err != nil {
				t.Errorf("stop master %d: %v", i, err)
			}
		})
		clients[i] = redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, PoolSize: 64})
		t.Cleanup(func() { clients[i].Close() })
	}
	return clients, servers
}

// cmdables lists clients as the masters NewRedlock takes.
func cmdables[C redis.Cmdable](cs []C) []redis.Cmdable {
	out := make([]redis.Cmdable, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// keysOn counts the masters that hold key.
func keysOn(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	n := 0
	for _, m := range masters {
		n += int(m.Exists(context.Background(), key).Val())
	}
	return n
}

// releaseGrace is how long a test waits for a release still on its way
// to the masters that did not make the quorum.
const releaseGrace = 3 * time.Second

// keysOnSoon is keysOn once the releases a Release did not wait for (it
// returns when a majority has released) have landed.
func keysOnSoon(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	deadline := time.Now().Add(releaseGrace)
	for {
		n := keysOn(t, masters, key)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// notifier subscribes to rdb's announcements, ready when it returns.
func notifier(t *testing.T, rdb *redis.Client, o notify.Options) *notify.Notifier {
	t.Helper()
	if err := notify.EnableKeyspaceEvents(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
	n := notify.New(rdb, o)
	t.Cleanup(func() { n.Close() })
	select {
	case <-n.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("notifier: no subscription after 5s")
	}
	return n
}

type obtained struct {
	l   lock.Lock
	err error
	at  time.Time
}

// obtainAsync obtains key on l in a goroutine of its own, and says when.
func obtainAsync(ctx context.Context, l lock.Locker, key string) <-chan obtained {
	ch := make(chan obtained, 1)
	go func() {
		held, err := l.Obtain(ctx, key, lock.Call{})
		ch <- obtained{held, err, time.Now()}
	}()
	return ch
}
