package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed/notify"
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
// masters for it. WaitFixed: every request tries at least once before its
// 1s bound, so all are counted once all have given up. WaitQueue: the
// bound is an hour, so nobody gives up and hands the head of the line on
// while the test looks: it counts once the head has asked and 200ms more
// have passed for a wrong second asker to show, then ends the waits. No
// clock decides a count: a loaded machine only starts them later.
func contenders(t *testing.T, mode lock.WaitMode, n int) int {
	t.Helper()
	clients, _ := startMasters(t, 5)
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
	rl := lock.NewRedlock(masters, o, lock.RedlockOptions{})
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
// once, not at its next poll (poll away here: a wake-up within half of
// it was the announcement's, however slow the machine).
func TestRedlockAnnouncementsWakeTheHead(t *testing.T) {
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	const poll = 30 * time.Second
	o := lock.Options{TTL: 2 * poll, Wait: 2 * poll}
	n := notifier(t, clients[0], notify.Options{Fallback: poll})
	here := lock.NewRedlock(cmdables(clients), o, lock.RedlockOptions{Notifier: n, QueuePause: poll})
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
	// The head has tried once and waits.
	for here.Counts().Retries == 0 {
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
func TestQuorum(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		if got := lock.Quorum(n); got != want {
			t.Errorf("Quorum(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestRedlockSurvivesTwoMastersDown: with 5 masters, 2 stopped, the lock
// is still had, excluded and released; with 3 stopped it is not, and the
// error names each dead master.
func TestRedlockSurvivesTwoMastersDown(t *testing.T) {
	clients, servers := startMasters(t, 5)
	ctx := context.Background()
	const key = "lock:k"
	for _, i := range []int{1, 3} {
		if err := servers[i].Stop(); err != nil {
			t.Fatal(err)
		}
	}
	live := []*redis.Client{clients[0], clients[2], clients[4]}
	rl := lock.NewRedlock(cmdables(clients), redlockOpts, lock.RedlockOptions{})

	start := time.Now()
	a, err := rl.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatalf("Obtain with 3 of 5 masters: %v", err)
	}
	v := a.(interface{ Validity() time.Duration }).Validity()
	if drift := redlockOpts.TTL/100 + 2*time.Millisecond; v <= 0 || v >= redlockOpts.TTL-drift {
		t.Errorf("validity %s, want in (0, TTL - drift = %s): the attempt's time comes off it", v, redlockOpts.TTL-drift)
	}
	t.Logf("Obtain with 2 masters down took %s; validity %s of a %s TTL", time.Since(start), v, redlockOpts.TTL)
	if n := keysOn(t, live, key); n != 3 {
		t.Fatalf("lock on %d live masters, want 3", n)
	}
	if _, err := lock.NewRedlock(cmdables(clients), redlockOpts, lock.RedlockOptions{}).Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second client while held: %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release with 3 of 5 masters: %v", err)
	}
	if n := keysOnSoon(t, live, key); n != 0 {
		t.Fatalf("lock left on %d live masters after release", n)
	}

	if err := servers[4].Stop(); err != nil {
		t.Fatal(err)
	}
	_, err = rl.Obtain(ctx, key, lock.Call{})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain with 2 of 5 masters: %v, want ErrNotObtained", err)
	}
	msg := err.Error()
	for _, i := range []int{1, 3, 4} {
		if name := fmt.Sprintf("redlock: node %d (%s): ", i, servers[i].Addr()); !strings.Contains(msg, name) {
			t.Errorf("error does not name dead master %q:\n%s", name, msg)
		}
	}
	for _, i := range []int{0, 2} {
		if name := fmt.Sprintf("node %d (", i); strings.Contains(msg, name) {
			t.Errorf("error blames live master %d:\n%s", i, msg)
		}
	}
	if !strings.Contains(msg, "on 2 of 5 masters (quorum 3)") {
		t.Errorf("error does not say how the last attempt went:\n%s", msg)
	}
	if n := keysOn(t, live[:2], key); n != 0 {
		t.Fatalf("the failed Obtain left its minority on %d masters", n)
	}
}

// setRecorder counts, per master, the SETs that took the lock.
type setRecorder struct {
	*redis.Client
	won *atomic.Int64
}

func (r setRecorder) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	cmd := r.Client.SetNX(ctx, key, value, ttl)
	if cmd.Val() {
		r.won.Add(1)
	}
	return cmd
}

// TestRedlockFailedAttemptReleasesMinority: 3 of 5 masters hold someone
// else's lock; every attempt takes the 2 free ones, loses, and gives them
// back.
func TestRedlockFailedAttemptReleasesMinority(t *testing.T) {
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	const key = "lock:k"
	for _, c := range clients[:3] {
		c.Set(ctx, key, "someone-else", 0)
	}
	won := make([]atomic.Int64, len(clients))
	masters := make([]redis.Cmdable, len(clients))
	for i, c := range clients {
		masters[i] = setRecorder{Client: c, won: &won[i]}
	}

	_, err := lock.NewRedlock(masters, redlockOpts, lock.RedlockOptions{}).Obtain(ctx, key, lock.Call{})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain against a majority held elsewhere: %v, want ErrNotObtained", err)
	}
	for i := 3; i < 5; i++ {
		if won[i].Load() == 0 {
			t.Fatalf("master %d: no attempt took the free master", i)
		}
	}
	if n := keysOn(t, clients[3:], key); n != 0 {
		t.Fatalf("the minority is still held on %d masters after the failed Obtain", n)
	}
	for i, c := range clients[:3] {
		if v := c.Get(ctx, key).Val(); v != "someone-else" {
			t.Fatalf("master %d: the other holder's lock became %q", i, v)
		}
	}
	t.Logf("%d attempts, each took the 2 free masters and gave them back", won[3].Load())
}

// TestRedlockQuorumOverEverySubset tries every subset of failed masters
// out of 5 (redsync's quorum test): the lock is had exactly when 3 or more
// are up. A failed master is either down (nobody listens) or held by
// someone else; either way a failed Obtain leaves no key behind.
func TestRedlockQuorumOverEverySubset(t *testing.T) {
	const n = 5
	clients, _ := startMasters(t, n)
	dead := masterClient(t, deadAddr(t))
	for _, mode := range []string{"down", "held elsewhere"} {
		for mask := range 1 << n {
			failed := bits.OnesCount(uint(mask))
			t.Run(fmt.Sprintf("%s/%05b", mode, mask), func(t *testing.T) {
				ctx := context.Background()
				key := fmt.Sprintf("lock:%s:%05b", mode, mask)
				masters := cmdables(clients)
				var live []*redis.Client
				for i := range n {
					switch {
					case mask&(1<<i) == 0:
						live = append(live, clients[i])
					case mode == "down":
						masters[i] = dead
					default:
						clients[i].Set(ctx, key, "someone-else", 0)
					}
				}
				o := redlockOpts
				o.Wait = 30 * time.Millisecond
				// A node timeout under releaseGrace: a live master's
				// late release still lands before the test looks.
				ro := lock.RedlockOptions{NodeTimeout: releaseGrace / 2}
				l, err := lock.NewRedlock(masters, o, ro).Obtain(ctx, key, lock.Call{})
				if want := n-failed >= lock.Quorum(n); (err == nil) != want {
					t.Fatalf("%d of %d masters up: Obtain = %v, want success %t", n-failed, n, err, want)
				}
				if err != nil {
					if !errors.Is(err, lock.ErrNotObtained) {
						t.Fatalf("got %v, want ErrNotObtained", err)
					}
					if k := keysOn(t, live, key); k != 0 {
						t.Fatalf("failed Obtain left the lock on %d live masters", k)
					}
					return
				}
				if k := keysOn(t, live, key); k < lock.Quorum(n) {
					t.Fatalf("lock on %d of %d live masters, want a quorum", k, len(live))
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if k := keysOnSoon(t, live, key); k != 0 {
					t.Fatalf("lock left on %d live masters after release", k)
				}
			})
		}
	}
}

// slowSet is a master whose SETs arrive late: the decision is made
// without it, and its SET lands after the lock was had.
type slowSet struct {
	*redis.Client
	delay time.Duration
}

func (r slowSet) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	time.Sleep(r.delay)
	return r.Client.SetNX(ctx, key, value, ttl)
}

// TestRedlockReleaseWaitsForALateSet: a master still setting our token
// when the others had decided gets its release after that SET, not
// before it (where it would find nothing and the SET would then hold the
// key there until the lease ends). CI found it as a key left on one of
// four live masters after a release.
func TestRedlockReleaseWaitsForALateSet(t *testing.T) {
	clients, _ := startMasters(t, 5)
	masters := cmdables(clients)
	masters[4] = slowSet{clients[4], 300 * time.Millisecond}
	rl := lock.NewRedlock(masters, redlockOpts, lock.RedlockOptions{NodeTimeout: releaseGrace / 2})
	ctx := context.Background()
	l, err := rl.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if clients[4].Exists(ctx, "lock:k").Val() != 0 {
		t.Fatal("the slow master's SET landed before Obtain returned: the test shows nothing")
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // the SET has landed
	if n := keysOnSoon(t, clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters after release", n)
	}
}

// TestRedlockValidityExhausted: with every master granting the lock but
// an attempt that takes longer than the TTL (a clock read as a full TTL
// later each time), the lock is never had, and nothing is left behind.
func TestRedlockValidityExhausted(t *testing.T) {
	clients, _ := startMasters(t, 5)
	ctx := context.Background()
	var reads atomic.Int64
	base := time.Now()
	o := redlockOpts
	o.Clock = func() time.Time { return base.Add(time.Duration(reads.Add(1)) * o.TTL) }
	_, err := lock.NewRedlock(cmdables(clients), o, lock.RedlockOptions{}).Obtain(ctx, "lock:k", lock.Call{})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain with no validity left: %v, want ErrNotObtained", err)
	}
	if !strings.Contains(err.Error(), "validity -") {
		t.Errorf("error does not say the validity ran out: %v", err)
	}
	if n := keysOn(t, clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters", n)
	}
}

// TestRedlockHungMasterCostsNoMoreThanTheNodeTimeout: a master that
// accepts the connection and never answers does not hold up an attempt
// that a majority has already granted, and costs a release the per-node
// timeout at most, never the client's read timeout.
func TestRedlockHungMasterCostsNoMoreThanTheNodeTimeout(t *testing.T) {
	clients, _ := startMasters(t, 4)
	ctx := context.Background()
	masters := append(cmdables(clients), masterClient(t, blackHole(t)))
	const nodeTimeout = 200 * time.Millisecond
	rl := lock.NewRedlock(masters, redlockOpts, lock.RedlockOptions{NodeTimeout: nodeTimeout})

	start := time.Now()
	l, err := rl.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatalf("Obtain with 4 of 5 masters answering: %v", err)
	}
	if took := time.Since(start); took >= nodeTimeout {
		t.Errorf("Obtain took %s: it waited for the hung master after a majority said yes", took)
	}
	if v := l.(interface{ Validity() time.Duration }).Validity(); v <= 0 || v > redlockOpts.TTL {
		t.Errorf("validity %s, want in (0, TTL]", v)
	}
	start = time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with 4 of 5 masters answering: %v", err)
	}
	if took := time.Since(start); took > 10*nodeTimeout {
		t.Errorf("Release took %s with a %s node timeout", took, nodeTimeout)
	}
	if n := keysOnSoon(t, clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters", n)
	}
}

// TestRedlockReleaseWithoutQuorum: when most masters die while the lock is
// held, Release cannot give it back on a quorum: ErrNotHeld, naming each
// master that failed.
func TestRedlockReleaseWithoutQuorum(t *testing.T) {
	clients, servers := startMasters(t, 5)
	ctx := context.Background()
	l, err := lock.NewRedlock(cmdables(clients), redlockOpts, lock.RedlockOptions{}).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 3} {
		servers[i].Stop()
	}
	err = l.Release(ctx)
	if !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release with 2 of 5 masters: %v, want ErrNotHeld", err)
	}
	for _, i := range []int{0, 2, 3} {
		if name := fmt.Sprintf("redlock: node %d (%s): ", i, servers[i].Addr()); !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %q:\n%v", name, err)
		}
	}
	if n := keysOn(t, []*redis.Client{clients[1], clients[4]}, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d live masters", n)
	}
}

// WaitCohort: a head whose section ends with others in its process's line
// passes the lock on in memory while more than half its validity is left,
// so one acquisition on the masters serves many sections, all exact;
// once half the validity has gone, the next section takes the lock on the
// masters again. A second Release of a passed section changes nothing.
func TestRedlockCohortPassesInMemory(t *testing.T) {
	clients, _ := startMasters(t, 5)
	masters, asked := recordingMasters(clients)
	ctx := context.Background()
	o := lock.Options{TTL: 10 * time.Second, Wait: 10 * time.Second, WaitMode: lock.WaitCohort}
	rl := lock.NewRedlock(masters, o, lock.RedlockOptions{})
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
	if n := keysOnSoon(t, clients, key); n != 0 {
		t.Errorf("%d masters still hold the lock %s after the last section", n, releaseGrace)
	}

	// Past half its validity, a lock is not passed on.
	short := lock.NewRedlock(masters, lock.Options{TTL: 400 * time.Millisecond, Wait: 5 * time.Second, WaitMode: lock.WaitCohort}, lock.RedlockOptions{})
	before := asked()
	first, err := short.Obtain(ctx, "lock:half", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	next := obtainAsync(ctx, short, "lock:half")
	time.Sleep(250 * time.Millisecond) // over half of 400ms
	first.Release(ctx)
	got := <-next
	if got.err != nil {
		t.Fatal(got.err)
	}
	got.l.Release(ctx)
	if n := asked() - before; n != 2 {
		t.Errorf("%d acquisitions on the masters for two sections, the first past half its validity: want 2", n)
	}
}
