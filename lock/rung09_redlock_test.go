package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// tokenRecorder notes every token that tried to SET the lock on a master.
type tokenRecorder struct {
	*redis.Client
	mu     *sync.Mutex
	tokens map[any]bool
}

func (r tokenRecorder) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	r.mu.Lock()
	r.tokens[value] = true
	r.mu.Unlock()
	return r.Client.SetNX(ctx, key, value, ttl)
}

// contenders runs n Obtains of a lock another client holds on every
// master, each waiting by mode, and counts the tokens that have asked the
// masters for it in the first 200ms, while all still wait.
func contenders(t *testing.T, mode lock.WaitMode, n int) int {
	t.Helper()
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	const key = "lock:held"
	var mu sync.Mutex
	tokens := map[any]bool{}
	masters := make([]redis.Cmdable, len(clients))
	for i, c := range clients {
		c.Set(ctx, key, "someone-else", time.Minute)
		masters[i] = tokenRecorder{Client: c, mu: &mu, tokens: tokens}
	}
	o := lock.Options{TTL: 5 * time.Second, Wait: time.Second, Retry: lock.FixedSleep(5 * time.Millisecond)}
	rl := lock.NewRedlock(masters, o, lock.RedlockOptions{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := rl.Obtain(ctx, key, lock.Call{Wait: mode}); !errors.Is(err, lock.ErrNotObtained) {
				t.Errorf("Obtain of a held lock (%s): %v, want ErrNotObtained", mode, err)
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	asked := len(tokens)
	mu.Unlock()
	wg.Wait()
	return asked
}

// TestRedlockQueueHasOneContenderPerProcess: by default (WaitQueue) the
// requests of one process line up in memory and only the head asks the
// masters; with the articles' fixed sleep every request does, which is
// what splits the masters' votes under load.
func TestRedlockQueueHasOneContenderPerProcess(t *testing.T) {
	if n := contenders(t, lock.WaitQueue, 20); n != 1 {
		t.Errorf("wait=queue: %d tokens asked the masters, want 1: the head of the line alone", n)
	}
	if n := contenders(t, lock.WaitFixed, 20); n != 20 {
		t.Errorf("wait=fixed: %d tokens asked the masters, want all 20", n)
	}
}

// TestRedlockQueueIsFIFO: requests that line up behind a holder get the
// lock in the order they came.
func TestRedlockQueueIsFIFO(t *testing.T) {
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	rl := lock.NewRedlock(cmdables(clients), lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second}, lock.RedlockOptions{})
	first, err := rl.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range 8 {
		wg.Go(func() {
			l, err := rl.Obtain(ctx, "lock:k", lock.Call{})
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Release(ctx); err != nil {
				t.Errorf("waiter %d: release: %v", i, err)
			}
		})
		time.Sleep(5 * time.Millisecond) // they arrive in order
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !slices.IsSorted(order) || len(order) != 8 {
		t.Fatalf("the line served %v, want 0 to 7 in order", order)
	}
}

// TestRedlockAnnouncementsWakeTheHead: another process releases; the head
// of this process's line hears it from the masters and takes the lock at
// once, not at its next poll (a second away here).
func TestRedlockAnnouncementsWakeTheHead(t *testing.T) {
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	o := lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second}
	n := notifier(t, clients[0], lock.NotifierOptions{Fallback: time.Second})
	here := lock.NewRedlock(cmdables(clients), o, lock.RedlockOptions{Notifier: n, QueuePause: time.Second})
	there := lock.NewRedlock(cmdables(clients), o, lock.RedlockOptions{Notifier: n}) // another process, as far as the line knows

	held, err := there.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		l, err := here.Obtain(ctx, "lock:k", lock.Call{})
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
		l.Release(ctx)
	}()
	time.Sleep(50 * time.Millisecond) // the head has tried and waits
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	at, ok := <-got
	if !ok {
		return
	}
	if took := at.Sub(released); took > 300*time.Millisecond {
		t.Fatalf("the head took the lock %s after the release: it slept to its next poll", took)
	}
}
