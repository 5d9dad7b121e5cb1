package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

// safeOpts: a short lease, so that lapses and renewals happen within a
// test, and a short wait bound, so that refusals are quick.
var safeOpts = lock.Options{TTL: 100 * time.Millisecond, Wait: 100 * time.Millisecond, Retry: lock.FixedSleep(2 * time.Millisecond)}

// ---- rung 8: reentrant ----

// holdCount is an owner's count in a reentrant lock's hash (0: no field).
func holdCount(t *testing.T, rdb *redis.Client, key, owner string) int64 {
	t.Helper()
	n, err := rdb.HGet(context.Background(), key, owner).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("HGET %s %s: %v", key, owner, err)
	}
	return n
}

// waitClosed fails the test unless ch closes within d.
func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	if ch == nil {
		t.Fatalf("%s: no channel", what)
	}
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: still running after %s", what, d)
	}
}

func TestReentrantCountsNestedAcquisitions(t *testing.T) {
	rdb, _ := redistest.Start(t)
	r := lock.NewReentrant(rdb, safeOpts)
	ctx, procA := context.Background(), lock.Call{Owner: "proc-a:1"}
	const key = "lock:k"

	outer, err := r.Obtain(ctx, key, procA)
	if err != nil {
		t.Fatal(err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after the outer Obtain = %d, want 1", n)
	}
	inner, err := r.Obtain(ctx, key, procA) // testReEnter: sale() takes its own lock again
	if err != nil {
		t.Fatalf("re-entering: %v", err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 2 {
		t.Fatalf("count after re-entering = %d, want 2", n)
	}
	if n := lock.Watchdogs(r); n != 1 {
		t.Fatalf("%d watchdogs, want 1: only the outermost acquisition starts one", n)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after the inner Release = %d, want 1: still held", n)
	}
	if err := inner.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the inner acquisition released twice: %v, want ErrNotHeld", err)
	}
	if n := holdCount(t, rdb, key, "proc-a:1"); n != 1 {
		t.Fatalf("count after a double release = %d, want 1 untouched", n)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key still there at count 0")
	}
	waitClosed(t, lock.WatchdogDone(outer), time.Second, "watchdog after the final release")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs after the final release, want 0", n)
	}
}

func TestReentrantExcludesOtherOwners(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, safeOpts)
	const key = "lock:k"

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("owner b while a holds: %v, want ErrNotObtained", err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("no owner while a holds: %v, want ErrNotObtained", err)
	}
	if n := holdCount(t, rdb, key, "b"); n != 0 {
		t.Fatalf("b has count %d in a's lock", n)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Without an owner in the context, every Obtain is a new owner: a
	// plain, non-reentrant lock.
	p, err := r.Obtain(ctx, key, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a second owner-less Obtain re-entered: %v, want ErrNotObtained", err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReentrantWatchdogOutlivesTTL is the fix rung 8 brings over rung 6:
// a business four times longer than the TTL keeps its lock, and nobody
// else enters meanwhile. After the release, the watchdog is gone and the
// key stays gone.
func TestReentrantWatchdogOutlivesTTL(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	// A 200ms lease renewed every 67ms: a renewal may run late by more
	// than two periods (a loaded CI machine under -race) and still count.
	o := safeOpts
	o.TTL = 200 * time.Millisecond
	r := lock.NewReentrant(rdb, o)
	const key, hold = "lock:k", 800 * time.Millisecond

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan error, 1)
	go func() {
		o := o
		o.Wait = hold - 100*time.Millisecond
		_, err := lock.NewReentrant(rdb, o).Obtain(ctx, key, lock.Call{Owner: "b"})
		other <- err
	}()
	for start := time.Now(); time.Since(start) < hold; time.Sleep(5 * time.Millisecond) {
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
			t.Fatalf("PTTL = %s after %s of a %s lease: the watchdog did not renew", ttl, time.Since(start), o.TTL)
		}
	}
	if err := <-other; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another owner during the hold: %v, want ErrNotObtained", err)
	}
	if n := holdCount(t, rdb, key, "a"); n != 1 {
		t.Fatalf("count after the hold = %d, want 1", n)
	}

	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(a), time.Second, "watchdog after release")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs after release", n)
	}
	time.Sleep(2 * o.TTL) // several renewal periods
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key back after release")
	}
}

// TestReentrantWatchdogStopsWhenLockIsGone: a renewal that finds the hash
// without our owner ends the watchdog on its own.
func TestReentrantWatchdogStopsWhenLockIsGone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, safeOpts)
	a, err := r.Obtain(ctx, "lock:k", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "lock:k")
	waitClosed(t, lock.WatchdogDone(a), time.Second, "watchdog of a deleted lock")
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs left", n)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Release of a deleted lock: %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, "lock:k").Val(); n != 0 {
		t.Fatalf("renewal or release recreated the key")
	}
}

// TestReentrantPausedOwnerLosesLock is the flaw rung 8 still shows: the
// holder's process pauses (GC, SIGSTOP) longer than the TTL, its watchdog
// with it; the lease lapses and another owner enters while the paused one
// still believes it holds the lock. Its late release is refused and
// leaves the new holder's count alone.
func TestReentrantPausedOwnerLosesLock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, safeOpts)
	const key = "lock:k"

	a, err := r.Obtain(ctx, key, lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	lock.StopWatchdog(a) // the process stops: nothing renews

	o := safeOpts
	o.Wait = 10 * safeOpts.TTL
	start := time.Now()
	b, err := lock.NewReentrant(rdb, o).Obtain(ctx, key, lock.Call{Owner: "b"})
	if err != nil {
		t.Fatalf("b while a is paused: %v; want b to enter once a's lease lapses", err)
	}
	t.Logf("b entered %s after a paused (TTL %s): two holders", time.Since(start).Round(time.Millisecond), safeOpts.TTL)
	if n := holdCount(t, rdb, key, "a"); n != 0 {
		t.Fatalf("a still has count %d", n)
	}

	// a wakes up (its watchdog never renews again)
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a's release after its lease lapsed: %v, want ErrNotHeld", err)
	}
	waitClosed(t, lock.WatchdogDone(a), time.Second, "a's watchdog")
	if n := holdCount(t, rdb, key, "b"); n != 1 {
		t.Fatalf("b's count after a's late release = %d, want 1", n)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(b), time.Second, "b's watchdog")
}

// TestReentrantLapsedAcquisitionLeavesNewLeaseAlone: the same owner's
// lease lapses and the owner takes the lock afresh; a late release of the
// lapsed acquisition must not decrement the new one's count.
func TestReentrantLapsedAcquisitionLeavesNewLeaseAlone(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx, a := context.Background(), lock.Call{Owner: "a"}
	r := lock.NewReentrant(rdb, safeOpts)
	const key = "lock:k"

	old, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	lock.StopWatchdog(old)
	for deadline := time.Now().Add(time.Second); rdb.Exists(ctx, key).Val() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lease did not lapse")
		}
	}
	fresh, err := r.Obtain(ctx, key, a)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(old), time.Second, "the lapsed lease's watchdog")
	if err := old.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release of the lapsed acquisition: %v, want ErrNotHeld", err)
	}
	if n := holdCount(t, rdb, key, "a"); n != 1 {
		t.Fatalf("the new lease's count = %d after the late release, want 1", n)
	}
	if err := fresh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, lock.WatchdogDone(fresh), time.Second, "the new lease's watchdog")
}

func TestReentrantObtainHonoursContext(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := safeOpts
	o.Wait = 5 * time.Second
	r := lock.NewReentrant(rdb, o)
	a, err := r.Obtain(ctx, "lock:k", lock.Call{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Obtain(cctx, "lock:k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Obtain(dctx, "lock:k", lock.Call{Owner: "b"}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx deadline: %v", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("waited %s for a 30ms ctx, not the ctx", waited)
	}
}

// TestReentrantLeavesNoWatchdog: many holders, nested or not, all
// released: every watchdog has returned.
func TestReentrantLeavesNoWatchdog(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	r := lock.NewReentrant(rdb, safeOpts)
	var held []lock.Lock
	for i := range 20 {
		owner := lock.Call{Owner: "owner-" + strconv.Itoa(i)}
		for range 1 + i%3 {
			l, err := r.Obtain(ctx, "lock:"+strconv.Itoa(i), owner)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, l)
		}
	}
	if n := lock.Watchdogs(r); n != 20 {
		t.Fatalf("%d watchdogs for 20 held locks", n)
	}
	for i := len(held) - 1; i >= 0; i-- {
		if err := held[i].Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range held {
		waitClosed(t, lock.WatchdogDone(l), time.Second, "watchdog")
	}
	if n := lock.Watchdogs(r); n != 0 {
		t.Fatalf("%d watchdogs left", n)
	}
}

// ---- rung 9: redlock ----

// startMasters starts n independent redis-servers at once (stack.StartRedis
// directly, so that a test can Stop one) and returns a client to each.
func startMasters(t testing.TB, n int) ([]*redis.Client, []*stack.Redis) {
	t.Helper()
	servers := make([]*stack.Redis, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			servers[i], errs[i] = stack.StartRedis(ctx, "127.0.0.1:0", stack.Auto, redistest.CI(), nil)
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
		clients[i] = masterClient(t, srv.Addr())
	}
	if servers[0].Embedded() {
		t.Logf("redis-server not on PATH: masters are embedded miniredis")
	}
	return clients, servers
}

// masterClient never retries and dials once: a dead master fails at once.
func masterClient(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// cmdables lists clients as the masters NewRedlock takes.
func cmdables[C redis.Cmdable](cs []C) []redis.Cmdable {
	out := make([]redis.Cmdable, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// blackHole is a loopback address that accepts connections and never
// answers: a hung master.
func blackHole(t *testing.T) string {
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

// keysOn counts the masters that hold key.
func keysOn(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	n := 0
	for _, m := range masters {
		n += int(m.Exists(context.Background(), key).Val())
	}
	return n
}

// keysOnSoon is keysOn once the releases a Release did not wait for (it
// returns when a majority has released) have landed: within a second.
func keysOnSoon(t *testing.T, masters []*redis.Client, key string) int {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		n := keysOn(t, masters, key)
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// redlockOpts: a TTL long enough that its default node timeout (TTL/10)
// absorbs a loaded machine, so that only tests about timeouts see them.
var redlockOpts = lock.Options{TTL: 5 * time.Second, Wait: 100 * time.Millisecond, Retry: lock.FixedSleep(5 * time.Millisecond)}

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
				l, err := lock.NewRedlock(masters, o, lock.RedlockOptions{}).Obtain(ctx, key, lock.Call{})
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

// ---- rung 10: fenced ----

func TestFencedTokensIncrease(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	o := safeOpts
	o.TTL = 5 * time.Second // outlives the other process's wait
	procs := []lock.Locker{lock.NewFenced(rdb, o), lock.NewFenced(rdb, o)}
	var last int64
	for i := range 6 {
		l, err := procs[i%2].Obtain(ctx, key, lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		tok := l.(lock.Tokened).Token()
		if tok <= last {
			t.Fatalf("acquisition %d: token %d after %d, want strictly larger", i, tok, last)
		}
		last = tok
		if _, err := procs[(i+1)%2].Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("the other process while held: %v, want ErrNotObtained", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			t.Fatalf("second Release: %v, want ErrNotHeld", err)
		}
	}
	if got := rdb.Get(ctx, lock.FenceKey(key)).Val(); got != strconv.FormatInt(last, 10) {
		t.Fatalf("%s = %q, want the last token %d", lock.FenceKey(key), got, last)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatalf("lock key left after the last release")
	}
}

// TestFencedStaleHolderIsRefused is rung 10's fix: A pauses past its
// lease, B takes the lock with a larger token and sells; when A wakes up
// and sells with its old token, the inventory refuses it. Two holders, but
// one sale.
func TestFencedStaleHolderIsRefused(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	store := inventory.New(rdb)
	if err := store.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	o := safeOpts
	o.Wait = 10 * safeOpts.TTL
	f := lock.NewFenced(rdb, o)

	a, err := f.Obtain(ctx, inventory.StockLock, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	// A is paused here; B waits until A's lease lapses and takes it.
	b, err := f.Obtain(ctx, inventory.StockLock, lock.Call{})
	if err != nil {
		t.Fatalf("B after A's lease lapsed: %v", err)
	}
	ta, tb := a.(lock.Tokened).Token(), b.(lock.Tokened).Token()
	if tb <= ta {
		t.Fatalf("B's token %d is not larger than A's %d", tb, ta)
	}
	if n, err := store.SellFenced(ctx, inventory.StockFence, tb); err != nil || n != 9 {
		t.Fatalf("B's sale: %d, %v", n, err)
	}
	if _, err := store.SellFenced(ctx, inventory.StockFence, ta); !errors.Is(err, inventory.ErrStaleToken) {
		t.Fatalf("A's sale after waking up: %v, want ErrStaleToken", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A's late release: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("B's release: %v", err)
	}
	if snap, _ := store.Snapshot(ctx); snap.Stock != 9 || snap.Sold != 1 {
		t.Fatalf("snapshot %+v, want stock 9, sold 1", snap)
	}
}

// ---- all three under contention ----

// TestSafeRungsExactUnderContention runs the non-atomic GET/SET increment
// from many goroutines under each of rungs 8 to 10: no update is lost.
func TestSafeRungsExactUnderContention(t *testing.T) {
	rdb, _ := redistest.Start(t)
	clients, _ := startMasters(t, 3)
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Retry: lock.FixedSleep(time.Millisecond)}
	for _, tc := range []struct {
		name   string
		rdb    *redis.Client
		locker lock.Locker
	}{
		{"reentrant", rdb, lock.NewReentrant(rdb, o)},
		{"redlock", clients[0], lock.NewRedlock(cmdables(clients), o, lock.RedlockOptions{})},
		{"fenced", rdb, lock.NewFenced(rdb, o)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			contend(t, tc.rdb, tc.locker, lock.Call{}, "n:"+tc.name, 10, 20)
		})
	}
}
