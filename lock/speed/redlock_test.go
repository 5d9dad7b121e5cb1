package speed_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// RedlockLine: a process's requests for a Redlock in a line, the lock
// passed (WaitCohort) or relayed (WaitRelay) down it.

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
// masters for it. WaitFixed: every request tries at least once before its
// 1s bound, so all are counted once all have given up. WaitQueue: the
// bound is an hour, so nobody gives up and hands the head of the line on
// while the test looks: it counts once the head has asked and 200ms more
// have passed for a wrong second asker to show, then ends the waits. No
// clock decides a count: a loaded machine only starts them later.
func contenders(t *testing.T, mode lock.WaitMode, n int) int {
	t.Helper()
	clients, _ := redistest.StartMasters(t, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const key = "lock:held"
	var mu sync.Mutex
	tokens := map[any]bool{}
	asked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(tokens)
	}
	masters := make([]redis.Cmdable, len(clients))
	for i, c := range clients {
		c.Set(ctx, key, "someone-else", time.Minute)
		masters[i] = tokenRecorder{Client: c, mu: &mu, tokens: tokens}
	}
	o := lock.Options{TTL: 5 * time.Second, Wait: time.Second, Retry: lock.FixedSleep(5 * time.Millisecond)}
	if mode == lock.WaitQueue {
		o.Wait = time.Hour
	}
	rl := speed.RedlockLine(lock.NewRedlock(masters, o, lock.RedlockOptions{}))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := rl.Obtain(ctx, key, lock.Call{Wait: mode}); !errors.Is(err, lock.ErrNotObtained) {
				t.Errorf("Obtain of a held lock (%s): %v, want ErrNotObtained", mode, err)
			}
		})
	}
	if mode == lock.WaitFixed {
		wg.Wait()
		return asked()
	}
	for asked() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	got := asked()
	cancel()
	wg.Wait()
	return got
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
	clients, _ := redistest.StartMasters(t, 5)
	ctx := context.Background()
	rl := speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(clients), lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second}, lock.RedlockOptions{}))
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
// once, not at its next poll (poll away here: a wake-up within half of
// it was the announcement's, however slow the machine).
func TestRedlockAnnouncementsWakeTheHead(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 5)
	ctx := context.Background()
	const poll = 30 * time.Second
	o := lock.Options{TTL: 2 * poll, Wait: 2 * poll}
	n := locktest.Notifier(t, clients[0], notify.Options{Fallback: poll})
	here := speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(clients), o, lock.RedlockOptions{Notifier: n, QueuePause: poll}))
	there := speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(clients), o, lock.RedlockOptions{Notifier: n})) // another process, as far as the line knows

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
	// The head has tried once and waits.
	for here.(lock.Counter).Counts().Retries == 0 {
		time.Sleep(time.Millisecond)
	}
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	at, ok := <-got
	if !ok {
		return
	}
	if took := at.Sub(released); took >= poll/2 {
		t.Fatalf("the head took the lock %s after the release: it slept to its next poll", took)
	}
}

// WaitCohort: a head whose section ends with others in its process's line
// passes the lock on in memory while more than half its validity is left,
// so one acquisition on the masters serves many sections, all exact;
// once half the validity has gone, the next section takes the lock on the
// masters again. A second Release of a passed section changes nothing.
func TestRedlockCohortPassesInMemory(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 5)
	masters, asked := recordingMasters(clients)
	ctx := context.Background()
	o := lock.Options{TTL: 10 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitCohort}
	rl := speed.RedlockLine(lock.NewRedlock(masters, o, lock.RedlockOptions{}))
	const key, workers, each = "lock:cohort", 10, 20
	sections(t, rl, clients[0], key, workers, each, nil)
	// Without passing, every section would ask the masters. With it, a
	// line that empties (its workers not yet back in it: a busy machine)
	// releases and asks again: 1 to 7 of 200 seen, so at most a tenth.
	if n := asked(); n < 1 || n > workers*each/10 {
		t.Errorf("%d acquisitions asked the masters for %d sections: want a few (passed in memory)", n, workers*each)
	}
	// Release returns once a majority has released: the others' releases
	// may still be on their way.
	if n := redistest.KeysOnSoon(clients, key); n != 0 {
		t.Errorf("%d masters still hold the lock %s after the last section", n, redistest.ReleaseGrace)
	}

	// Past half its validity, a lock is not passed on.
	short := speed.RedlockLine(lock.NewRedlock(masters, lock.Options{TTL: 400 * time.Millisecond, Wait: 5 * time.Second, WaitMode: lock.WaitCohort}, lock.RedlockOptions{}))
	before := asked()
	first, err := short.Obtain(ctx, "lock:half", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next := locktest.ObtainAsync(ctx, short, "lock:half")
	time.Sleep(250 * time.Millisecond) // over half of 400ms
	first.Release(ctx)
	got := <-next
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	got.L.Release(ctx)
	if n := asked() - before; n != 2 {
		t.Errorf("%d acquisitions on the masters for two sections, the first past half its validity: want 2", n)
	}
}

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
	rl := speed.RedlockLine(lock.NewRedlock(masters, lock.Options{TTL: 10 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{}))
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
	if n := redistest.KeysOnSoon(clients, key); n != 0 {
		t.Errorf("%d masters still hold the lock after the last section", n)
	}
	// Every section but those a SET NX took was relayed: a handoff each.
	if got, want := rl.(lock.Counter).Counts().Handoffs, uint64(workers*each-asked()); got != want {
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
	rl := speed.RedlockLine(lock.NewRedlock(masters, lock.Options{TTL: 10 * time.Second, Wait: 5 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{}))
	first, err := rl.Obtain(ctx, "lock:lost", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next := locktest.ObtainAsync(ctx, rl, "lock:lost")
	time.Sleep(50 * time.Millisecond)
	for _, c := range clients[:3] {
		c.Del(ctx, "lock:lost")
	}
	if err := first.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release after losing 3 of 5 masters: %v, want ErrNotHeld", err)
	}
	got := <-next
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if n := asked(); n != 2 {
		t.Errorf("%d acquisitions by SET NX: want 2 (nothing relayed without a majority)", n)
	}
	got.L.Release(ctx)

	short := speed.RedlockLine(lock.NewRedlock(masters, lock.Options{TTL: 400 * time.Millisecond, Wait: 5 * time.Second, WaitMode: lock.WaitRelay}, lock.RedlockOptions{}))
	before := asked()
	first, err = short.Obtain(ctx, "lock:half", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next = locktest.ObtainAsync(ctx, short, "lock:half")
	time.Sleep(250 * time.Millisecond) // over half of 400ms
	first.Release(ctx)
	if got = <-next; got.Err != nil {
		t.Fatal(got.Err)
	}
	got.L.Release(ctx)
	if n := asked() - before; n != 2 {
		t.Errorf("%d acquisitions by SET NX for two sections, the first past half its lease: want 2", n)
	}
}
