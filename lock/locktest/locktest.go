// Package locktest holds what the tests of package lock and its
// subpackages share: the articles' non-atomic increment run under a lock.
package locktest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// Increment runs workers goroutines, each doing the articles' non-atomic
// increment of key each times under l (GET, a short pause to widen the
// window, SET n+1). It returns the increments done, the counter's final
// value, and the longest wait for the lock.
func Increment(t *testing.T, rdb *redis.Client, l lock.Locker, c lock.Call, key string, workers, each int) (ok, counter int64, longest time.Duration) {
	t.Helper()
	r := increment(t, rdb, l, c, key, workers, each)
	return r.done, r.counter, r.longest
}

// run is what increment read back.
type run struct {
	done, counter int64
	longest       time.Duration
	overtaken     int64 // the most sections others began while one waited
}

func increment(t *testing.T, rdb *redis.Client, l lock.Locker, c lock.Call, key string, workers, each int) run {
	t.Helper()
	ctx := context.Background()
	var done, longestNs, begun, overtaken atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				start, before := time.Now(), begun.Load()
				held, err := l.Obtain(ctx, "lock:"+key, c)
				if err != nil {
					t.Error(err)
					return
				}
				if w := int64(time.Since(start)); w > longestNs.Load() {
					longestNs.Store(w) // racy max, good enough for a bound
				}
				if o := begun.Add(1) - 1 - before; o > overtaken.Load() {
					overtaken.Store(o) // racy max, as above
				}
				n, _ := rdb.Get(ctx, key).Int()
				time.Sleep(100 * time.Microsecond) // widen the window a little
				rdb.Set(ctx, key, strconv.Itoa(n+1), 0)
				if err := held.Release(ctx); err != nil {
					t.Error(err)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	got, _ := rdb.Get(ctx, key).Int64()
	return run{done.Load(), got, time.Duration(longestNs.Load()), overtaken.Load()}
}

// ContendInTurn is Contend for a lock that serves its waiters in turn:
// it returns the most sections that began while one request waited (its
// place in the queue and the sections of those ahead), which the ladder's
// fair lock bounds by the other workers, however slow the machine.
func ContendInTurn(t *testing.T, rdb *redis.Client, l lock.Locker, c lock.Call, key string, workers, each int) (overtaken int64) {
	t.Helper()
	r := increment(t, rdb, l, c, key, workers, each)
	if lost := r.done - r.counter; lost != 0 || r.done != int64(workers*each) {
		t.Fatalf("%d increments of %d, counter %d: %d lost", r.done, workers*each, r.counter, lost)
	}
	return r.overtaken
}

// Contend is Increment under a lock that must exclude: every increment
// done and none lost. It returns the increments and the longest wait.
func Contend(t *testing.T, rdb *redis.Client, l lock.Locker, c lock.Call, key string, workers, each int) (int64, time.Duration) {
	t.Helper()
	ok, got, longest := Increment(t, rdb, l, c, key, workers, each)
	if lost := ok - got; lost != 0 || ok != int64(workers*each) {
		t.Fatalf("%d increments of %d, counter %d: %d lost", ok, workers*each, got, lost)
	}
	return ok, longest
}

// BlackHole is a loopback address that accepts connections and never
// answers: a hung master.
func BlackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Alternate spreads Obtains over two Lockers, as two processes would.
type Alternate [2]lock.Locker

func (a Alternate) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	return a[time.Now().UnixNano()%2].Obtain(ctx, key, c)
}

// Refuses checks, while another holds key, that l answers one attempt
// (try=0) with ErrBusy at once, and a call bounded by bound with
// ErrNotObtained, no sooner than bound and sooner than own, the Locker's
// own wait: the call's bound is what ended it, whatever the machine's load.
func Refuses(t *testing.T, l lock.Locker, key string, bound, own time.Duration) {
	t.Helper()
	ctx := context.Background()
	zero := time.Duration(0)
	if _, err := l.Obtain(ctx, key, lock.Call{Try: &zero}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("try=0 while held: %v, want ErrBusy", err)
	}
	start := time.Now()
	if _, err := l.Obtain(ctx, key, lock.Call{Try: &bound}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a %s try while held: %v, want ErrNotObtained", bound, err)
	}
	if took := time.Since(start); took < bound || took >= own {
		t.Errorf("gave up after %s, want %s or more and less than the Locker's own %s", took, bound, own)
	}
}

// Obtained is what ObtainAsync's Obtain returned, and when.
type Obtained struct {
	L   lock.Lock
	Err error
	At  time.Time
}

// ObtainAsync obtains key on l in a goroutine of its own, and says when.
func ObtainAsync(ctx context.Context, l lock.Locker, key string) <-chan Obtained {
	ch := make(chan Obtained, 1)
	go func() {
		held, err := l.Obtain(ctx, key, lock.Call{})
		ch <- Obtained{held, err, time.Now()}
	}()
	return ch
}

// Notifier returns a Notifier over rdb whose subscription is confirmed,
// with rdb's keyspace events on (what WaitNotify waits for), closed when
// the test ends.
func Notifier(t *testing.T, rdb *redis.Client, o notify.Options) *notify.Notifier {
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
