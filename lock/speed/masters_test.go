package speed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// Masters for RedlockLine's tests, as package lock's Redlock tests start
// them: real redis-servers (the embedded stand-in where one is missing
// outside CI), and how many of them hold a key.

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
