package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

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
	clients, servers := redistest.StartMasters(t, 5)
	ctx := context.Background()
	const key = "lock:k"
	for _, i := range []int{1, 3} {
		if err := servers[i].Stop(); err != nil {
			t.Fatal(err)
		}
	}
	live := []*redis.Client{clients[0], clients[2], clients[4]}
	rl := lock.NewRedlock(redistest.Cmdables(clients), redlockOpts, lock.RedlockOptions{})

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
	if n := redistest.KeysOn(live, key); n != 3 {
		t.Fatalf("lock on %d live masters, want 3", n)
	}
	if _, err := lock.NewRedlock(redistest.Cmdables(clients), redlockOpts, lock.RedlockOptions{}).Obtain(ctx, key, lock.Call{}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second client while held: %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release with 3 of 5 masters: %v", err)
	}
	if n := redistest.KeysOnSoon(live, key); n != 0 {
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
	if n := redistest.KeysOn(live[:2], key); n != 0 {
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
	clients, _ := redistest.StartMasters(t, 5)
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
	if n := redistest.KeysOn(clients[3:], key); n != 0 {
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
	clients, _ := redistest.StartMasters(t, n)
	dead := redistest.MasterClient(t, deadAddr(t))
	for _, mode := range []string{"down", "held elsewhere"} {
		for mask := range 1 << n {
			failed := bits.OnesCount(uint(mask))
			t.Run(fmt.Sprintf("%s/%05b", mode, mask), func(t *testing.T) {
				ctx := context.Background()
				key := fmt.Sprintf("lock:%s:%05b", mode, mask)
				masters := redistest.Cmdables(clients)
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
				// A node timeout under redistest.ReleaseGrace: a live master's
				// late release still lands before the test looks.
				ro := lock.RedlockOptions{NodeTimeout: redistest.ReleaseGrace / 2}
				l, err := lock.NewRedlock(masters, o, ro).Obtain(ctx, key, lock.Call{})
				if want := n-failed >= lock.Quorum(n); (err == nil) != want {
					t.Fatalf("%d of %d masters up: Obtain = %v, want success %t", n-failed, n, err, want)
				}
				if err != nil {
					if !errors.Is(err, lock.ErrNotObtained) {
						t.Fatalf("got %v, want ErrNotObtained", err)
					}
					if k := redistest.KeysOn(live, key); k != 0 {
						t.Fatalf("failed Obtain left the lock on %d live masters", k)
					}
					return
				}
				if k := redistest.KeysOn(live, key); k < lock.Quorum(n) {
					t.Fatalf("lock on %d of %d live masters, want a quorum", k, len(live))
				}
				if err := l.Release(ctx); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if k := redistest.KeysOnSoon(live, key); k != 0 {
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
	clients, _ := redistest.StartMasters(t, 5)
	masters := redistest.Cmdables(clients)
	masters[4] = slowSet{clients[4], 300 * time.Millisecond}
	rl := lock.NewRedlock(masters, redlockOpts, lock.RedlockOptions{NodeTimeout: redistest.ReleaseGrace / 2})
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
	if n := redistest.KeysOnSoon(clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters after release", n)
	}
}

// TestRedlockValidityExhausted: with every master granting the lock but
// an attempt that takes longer than the TTL (a clock read as a full TTL
// later each time), the lock is never had, and nothing is left behind.
func TestRedlockValidityExhausted(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 5)
	ctx := context.Background()
	var reads atomic.Int64
	base := time.Now()
	o := redlockOpts
	o.Clock = func() time.Time { return base.Add(time.Duration(reads.Add(1)) * o.TTL) }
	_, err := lock.NewRedlock(redistest.Cmdables(clients), o, lock.RedlockOptions{}).Obtain(ctx, "lock:k", lock.Call{})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain with no validity left: %v, want ErrNotObtained", err)
	}
	if !strings.Contains(err.Error(), "validity -") {
		t.Errorf("error does not say the validity ran out: %v", err)
	}
	if n := redistest.KeysOn(clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters", n)
	}
}

// TestRedlockHungMasterCostsNoMoreThanTheNodeTimeout: a master that
// accepts the connection and never answers does not hold up an attempt
// that a majority has already granted, and costs a release the per-node
// timeout at most, never the client's read timeout.
func TestRedlockHungMasterCostsNoMoreThanTheNodeTimeout(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 4)
	ctx := context.Background()
	masters := append(redistest.Cmdables(clients), redistest.MasterClient(t, blackHole(t)))
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
	if n := redistest.KeysOnSoon(clients, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d masters", n)
	}
}

// TestRedlockReleaseWithoutQuorum: when most masters die while the lock is
// held, Release cannot give it back on a quorum: ErrNotHeld, naming each
// master that failed.
func TestRedlockReleaseWithoutQuorum(t *testing.T) {
	clients, servers := redistest.StartMasters(t, 5)
	ctx := context.Background()
	l, err := lock.NewRedlock(redistest.Cmdables(clients), redlockOpts, lock.RedlockOptions{}).Obtain(ctx, "lock:k", lock.Call{})
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
	if n := redistest.KeysOn([]*redis.Client{clients[1], clients[4]}, "lock:k"); n != 0 {
		t.Fatalf("lock left on %d live masters", n)
	}
}
