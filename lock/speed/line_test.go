package speed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

type callerID struct{}

// busyRung never gets the lock; it notes which callers tried.
type busyRung struct {
	mu    sync.Mutex
	tried map[any]bool
}

func (b *busyRung) Try(ctx context.Context, _ string, _ lock.Call) (lock.Lock, bool, error) {
	b.mu.Lock()
	b.tried[ctx.Value(callerID{})] = true
	b.mu.Unlock()
	return nil, false, nil
}

// TestQueueHasOneContenderPerProcess: by default (WaitQueue) a polling
// lock lines a process's requests up in memory and only the head tries;
// with the articles' fixed sleep, every request tries. (Counted while all
// still wait: as the first ones give up, the next ones reach the head.)
func TestQueueHasOneContenderPerProcess(t *testing.T) {
	for _, c := range []struct {
		mode lock.WaitMode
		want int
	}{{"", 1}, {lock.WaitQueue, 1}, {lock.WaitFixed, 20}} {
		rung := &busyRung{tried: map[any]bool{}}
		o := lock.Options{Wait: 300 * time.Millisecond, Retry: lock.FixedSleep(5 * time.Millisecond)}
		l := speed.Line(lock.Poll(rung, o), o)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				ctx := context.WithValue(context.Background(), callerID{}, i)
				if _, err := l.Obtain(ctx, "k", lock.Call{Wait: c.mode}); !errors.Is(err, lock.ErrNotObtained) {
					t.Errorf("wait=%q: Obtain of a lock never free: %v, want ErrNotObtained", c.mode, err)
				}
			})
		}
		time.Sleep(150 * time.Millisecond) // all still wait
		rung.mu.Lock()
		n := len(rung.tried)
		rung.mu.Unlock()
		wg.Wait()
		if n != c.want {
			t.Errorf("wait=%q: %d of 20 requests tried the lock, want %d", c.mode, n, c.want)
		}
	}
}

// TestQueueLetsTheOwnerReenter: a holder that takes its reentrant lock
// again does not queue behind the requests that wait for it.
func TestQueueLetsTheOwnerReenter(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := lock.Options{TTL: 5 * time.Second, Wait: 2 * time.Second}
	r := speed.Line(lock.NewReentrant(rdb, o), o)
	outer, err := r.Obtain(ctx, "lock:re", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 5)
	for range 5 {
		go func() {
			l, err := r.Obtain(ctx, "lock:re", lock.Call{})
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
	}
	time.Sleep(50 * time.Millisecond) // they are in the line
	start := time.Now()
	inner, err := r.Obtain(ctx, "lock:re", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatalf("re-entry with 5 requests in the line: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("re-entry took %s: it queued behind the waiters", d)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-got; err != nil {
			t.Errorf("a waiter after the owner's release: %v", err)
		}
	}
}

// freeAfter is a rung that is busy for its first n tries, then free.
type freeAfter struct {
	mu sync.Mutex
	n  int
}

func (f *freeAfter) Try(context.Context, string, lock.Call) (lock.Lock, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		f.n--
		return nil, false, nil
	}
	return nopLock{}, true, nil
}

type nopLock struct{}

func (nopLock) Release(context.Context) error { return nil }

// TestLineWaitsAsTheRungDoes: a rung whose constructor drops the app's
// Notifier (the PostgreSQL rungs: nothing announces their release) is
// polled at the head of its line every 2ms, not woken by the Notifier's
// 100ms fallback. Every pause the head asks for is recorded (Options.After).
func TestLineWaitsAsTheRungDoes(t *testing.T) {
	rdb, _ := redistest.Start(t)
	var mu sync.Mutex
	var pauses []time.Duration
	after := func(d time.Duration) <-chan time.Time {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
		c := make(chan time.Time, 1)
		c <- time.Time{}
		return c
	}
	n := notify.New(rdb, notify.Options{})
	o := lock.Options{Wait: time.Minute, Notifier: n, After: after}
	ro := o
	ro.Notifier = nil // as lock.NewPGAdvisory does
	l := speed.Line(lock.Poll(&freeAfter{n: 5}, ro), o)
	held, err := l.Obtain(context.Background(), "k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	held.Release(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(pauses) != 5 {
		t.Fatalf("the head paused %d times for 5 busy tries, want 5", len(pauses))
	}
	for _, d := range pauses {
		if d > 10*time.Millisecond {
			t.Errorf("the head paused %s between two tries, want the 2ms poll: it waited on a Notifier the rung does not use", d)
		}
	}
}
