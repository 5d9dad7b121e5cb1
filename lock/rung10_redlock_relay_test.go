package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// sections runs workers goroutines that each take l's key each times and,
// inside (after check, when given), increment n non-atomically, release,
// and find a second release refused; then n must count every section.
func sections(t *testing.T, l lock.Locker, counter *redis.Client, key string, workers, each int, check func(lock.Lock)) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				held, err := l.Obtain(ctx, key, lock.Call{})
				if err != nil {
					t.Error(err)
					return
				}
				if check != nil {
					check(held)
				}
				v, _ := counter.Get(ctx, "n").Int64()
				counter.Set(ctx, "n", v+1, 0)
				if err := held.Release(ctx); err != nil {
					t.Error(err)
				}
				if err := held.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("a second Release: %v, want ErrNotHeld", err)
				}
			}
		})
	}
	wg.Wait()
	if got, _ := counter.Get(ctx, "n").Int64(); got != int64(workers*each) {
		t.Fatalf("counter %d after %d increments", got, workers*each)
	}
}

// recordingMasters wraps clients so that every token a SET NX offers is
// noted: how many acquisitions asked the masters.
func recordingMasters(clients []*redis.Client) (masters []redis.Cmdable, asked func() int) {
	var mu sync.Mutex
	tokens := map[any]bool{}
	for _, c := range clients {
		masters = append(masters, tokenRecorder{Client: c, mu: &mu, tokens: tokens})
	}
	return masters, func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(tokens)
	}
}

// WaitRelay: a head whose section ends with others in its process's line
// swaps its token for the next one's on the masters, so a chain of
// sections pays one SET NX; every section still holds a token of its own
// on a majority of masters, with a fresh lease. All exact, nothing left.
func TestRedlockRelaySwapsTheTokenOnTheMasters(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 5)
	masters, asked := recordingMasters(clients)
	ctx := context.Background()
	rl := lock.NewRedlock(masters, lock.Options{TTL: 10 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{})
	const key, workers, each = "lock:relay", 10, 20
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	sections(t, rl, clients[0], key, workers, each, func(l lock.Lock) {
		if v := l.(interface{ Validity() time.Duration }).Validity(); v <= 0 || v > 10*time.Second {
			t.Errorf("a section's validity %s, want within its 10s lease", v)
		}
		// Our own token, on a majority, with a lease of its own.
		holders := map[string]int{}
		for _, c := range clients {
			holders[c.Get(ctx, key).Val()]++
		}
		mine := ""
		for tok, n := range holders {
			if n >= lock.Quorum(len(clients)) {
				mine = tok
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if mine == "" || seen[mine] {
			t.Errorf("a section found the masters holding %v: want a token of its own on a majority", holders)
		}
		seen[mine] = true
	})
	if n := asked(); n < workers*each/64 || n > 20 {
		t.Errorf("%d acquisitions asked the masters by SET NX for %d sections: want a handful, the rest relayed (at most 64 a chain)", n, workers*each)
	}
	// (A release returns once a majority has answered: the others' may
	// still be on their way.)
	if n := keysOnSoon(t, clients, key); n != 0 {
		t.Errorf("%d masters still hold the lock after the last section", n)
	}
	// Every section but those a SET NX took was relayed: a handoff each.
	if got, want := rl.Counts().Handoffs, uint64(workers*each-asked()); got != want {
		t.Errorf("%d handoffs counted, want %d (sections not taken by SET NX)", got, want)
	}
}

// A relay that finds its token gone from a majority (the lease lapsed
// there, a master forgot it) hands nothing over: the holder's Release says
// ErrNotHeld, and the waiter takes the lock on the masters like anyone.
// Past half its lease, a chain is not continued either.
func TestRedlockRelayNeedsAMajority(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 5)
	masters, asked := recordingMasters(clients)
	ctx := context.Background()
	rl := lock.NewRedlock(masters, lock.Options{TTL: 10 * time.Second, Wait: 5 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{})
	first, err := rl.Obtain(ctx, "lock:lost", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next := obtainAsync(ctx, rl, "lock:lost")
	time.Sleep(50 * time.Millisecond)
	for _, c := range clients[:3] {
		c.Del(ctx, "lock:lost")
	}
	if err := first.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release after losing 3 of 5 masters: %v, want ErrNotHeld", err)
	}
	got := <-next
	if got.err != nil {
		t.Fatal(got.err)
	}
	if n := asked(); n != 2 {
		t.Errorf("%d acquisitions by SET NX: want 2 (nothing relayed without a majority)", n)
	}
	got.l.Release(ctx)

	short := lock.NewRedlock(masters, lock.Options{TTL: 400 * time.Millisecond, Wait: 5 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{})
	before := asked()
	first, err = short.Obtain(ctx, "lock:half", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next = obtainAsync(ctx, short, "lock:half")
	time.Sleep(250 * time.Millisecond) // over half of 400ms
	first.Release(ctx)
	if got = <-next; got.err != nil {
		t.Fatal(got.err)
	}
	got.l.Release(ctx)
	if n := asked() - before; n != 2 {
		t.Errorf("%d acquisitions by SET NX for two sections, the first past half its lease: want 2", n)
	}
}

// The calls to one master can arrive out of order: a swap that lands late
// must not put an older token back over a newer one, and one that lands
// after the chain's release must not leave a lock behind.
func TestRelayOutOfOrderOnOneMaster(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 1)
	rdb, ctx := clients[0], context.Background()
	rdb.Set(ctx, "k", "c1", time.Minute) // the chain's first token
	for _, c := range []struct {
		seq  int
		want bool
		left string
	}{{2, true, "c1#2"}, {1, false, "c1#2"}, {3, true, "c1#3"}} {
		if ok, err := lock.Swap(ctx, rdb, "k", "c1", c.seq); err != nil || ok != c.want {
			t.Fatalf("swap to #%d: %v %v, want %v", c.seq, ok, err, c.want)
		}
		if got := rdb.Get(ctx, "k").Val(); got != c.left {
			t.Fatalf("after the swap to #%d the master holds %q, want %q", c.seq, got, c.left)
		}
	}
	if ok, _ := lock.Swap(ctx, rdb, "k", "other", 9); ok {
		t.Fatal("another chain's swap replaced the token")
	}
	if ok, _ := lock.ChainRelease(ctx, rdb, "k", "c1", 2); ok {
		t.Fatal("a release up to #2 removed #3")
	}
	if ok, _ := lock.ChainRelease(ctx, rdb, "k", "c1", 4); !ok {
		t.Fatal("the chain's release up to #4 left #3")
	}
	if ok, _ := lock.Swap(ctx, rdb, "k", "c1", 5); ok || rdb.Exists(ctx, "k").Val() != 0 {
		t.Fatal("a swap that landed after the release put the lock back")
	}
}
