package explore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/lock"
)

// tb is a testing.TB that keeps what Check reports instead of failing.
type tb struct {
	testing.TB
	mu         sync.Mutex
	errs, logs []string
}

func (r *tb) Helper() {}

func (r *tb) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *tb) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// fencedLock is leaseLock with a fencing token: one script takes the
// lease and, if it did, increments the lock's counter.
type fencedLock struct{ leaseLock }

type fencedHeld struct {
	leaseHeld
	token int64
}

func (h *fencedHeld) Token() int64 { return h.token }

var fencedObtain = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) end return 0`)

func (l *fencedLock) Obtain(ctx context.Context, key string) (explore.Held, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	n, err := fencedObtain.Run(ctx, l.rdb, []string{key, key + ":counter"}, token, l.ttl.Milliseconds()).Int64()
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, explore.ErrNotObtained
	}
	return &fencedHeld{leaseHeld{&l.leaseLock, key, token}, n}, nil
}

var (
	naive = explore.Lock{Name: "lease", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return &leaseLock{rdb: rdb, ttl: env.TTL}
	}}
	fenced = explore.Lock{Name: "lease-fenced", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return &fencedLock{leaseLock{rdb: rdb, ttl: env.TTL}}
	}}
)

// TestCheckFailsANaiveLock: Check fails the test of a lease lock with the
// shortest schedule that oversells it, drawn; the schedule is replayed on
// a real redis-server with the lock's own code.
func TestCheckFailsANaiveLock(t *testing.T) {
	rec := &tb{TB: t}
	r := explore.CheckWith(t, rec, naive, explore.Config{Budget: hangGuard})
	if r.Verdict != explore.Oversold || r.Steps != 7 || r.Clients != 2 {
		t.Fatalf("lease: %s in %d steps with %d clients, want %s in 7 with 2", r.Verdict, r.Steps, r.Clients, explore.Oversold)
	}
	if len(rec.errs) != 1 {
		t.Fatalf("Check reported %d errors, want 1: %q", len(rec.errs), rec.errs)
	}
	for _, want := range []string{"lease: OVERSOLD in 7 steps", "| A ", "| B ", "SET lock A1 ex 2 nx  [holds the lock]", "-- time passes to 2000ms --", "two clients wrote inside their sections at once"} {
		if !strings.Contains(rec.errs[0], want) {
			t.Errorf("Check's failure does not show %q:\n%s", want, rec.errs[0])
		}
	}
	p := replayer(t)
	if p == nil {
		t.Skip("no redis-server to replay on")
	}
	if got := p.Replay(context.Background(), naive.Target(), r); got != "reproduced" {
		t.Errorf("lease's counterexample replayed on redis-server: %s", got)
	}
	if got := p.Replay(context.Background(), fenced.Target(), r); got != "not-reproduced" {
		t.Errorf("lease's counterexample replayed on the fenced lock: %s, want not-reproduced", got)
	}
}

// TestCheckPassesAFencedLock: the same lock with a fencing token the
// write checks: nothing found, and what was covered is logged.
func TestCheckPassesAFencedLock(t *testing.T) {
	rec := &tb{TB: t}
	// Depth 10, past the lease lock's 7: idle, every schedule of 10 steps
	// is seen in about 4 s (every state, 12, in 5), and a budget that
	// is not reached on a loaded machine.
	r := explore.CheckWith(t, rec, fenced, explore.Config{MaxClients: 2, Depth: 10, Budget: hangGuard})
	if len(rec.errs) != 0 || r.Verdict != explore.None {
		t.Fatalf("fenced lease: %s, errors %q", r.Verdict, rec.errs)
	}
	if len(r.Covers) != 1 || r.Covers[0].Depth < 10 || r.Covers[0].Bound == "time" || r.States < 100 {
		t.Errorf("fenced lease: covered too little to say: %s", r.Covered())
	}
	if len(rec.logs) != 1 || !strings.Contains(rec.logs[0], "lease-fenced: no violation found") || !strings.Contains(rec.logs[0], "covered: 2 clients: every schedule to depth 10") {
		t.Errorf("Check's log does not say what it covered: %q", rec.logs)
	}
	if testing.Verbose() {
		fmt.Fprintln(os.Stdout, rec.logs)
	}
}

// TestCheckTheLabsRung: a lab rung checked through the public API, as
// an engineer would adapt a lock of the lab's shape, is found broken as
// the explorer's own target finds it.
// getset reads its clock through Env.Now, so a skewed client's runs
// ahead; reentrant renews by Env.NewTicker's ticks (virtualTicker
// here, the same), frozen in a pause.
func TestCheckTheLabsRung(t *testing.T) {
	for _, c := range []struct {
		name   string
		new    func(redis.Cmdable, lock.Options) lock.Locker
		faults explore.Faults
	}{
		{"lua", lock.NewLua, explore.Slow},
		{"getset", lock.NewGetSet, explore.Skew | explore.Idle},
		{"reentrant", lock.NewReentrant, explore.Pause | explore.Idle},
	} {
		l := explore.Lock{Name: c.name, New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
			o := lock.Options{TTL: env.TTL, Clock: env.Now, After: env.After,
				Ticker: func(every time.Duration) lock.Ticker { return env.NewTicker(every) }}
			return labLocker{c.new(rdb, o)}
		}}
		r, err := explore.Search(context.Background(), l, explore.Config{Faults: c.faults, Budget: hangGuard})
		if err != nil {
			t.Fatal(err)
		}
		if want := search(t, c.name); r.Verdict != want.Verdict || r.Steps != want.Steps || r.Clients != want.Clients {
			t.Errorf("%s through Check: %s in %d steps, %d clients; the explorer's target: %s in %d, %d", c.name, r.Verdict, r.Steps, r.Clients, want.Verdict, want.Steps, want.Clients)
		}
	}
}

// watchdogLock is leaseLock renewing its lease every third of it by
// Env.NewTicker, until released.
type watchdogLock struct {
	leaseLock
	env explore.Env
}

var renewScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)

type watchdogHeld struct {
	*leaseHeld
	stop context.CancelFunc
	done chan struct{}
}

func (l *watchdogLock) Obtain(ctx context.Context, key string) (explore.Held, error) {
	h, err := l.leaseLock.Obtain(ctx, key)
	if err != nil {
		return nil, err
	}
	lh := h.(*leaseHeld)
	every := l.ttl / 3
	tick := l.env.NewTicker(every) // made by the holder, before its goroutine
	wctx, stop := context.WithCancel(context.Background())
	w := &watchdogHeld{lh, stop, make(chan struct{})}
	go func() {
		defer close(w.done)
		defer tick.Stop()
		for tick.Wait(wctx) {
			rctx, cancel := context.WithTimeout(wctx, every)
			n, err := renewScript.Run(rctx, l.rdb, []string{key}, lh.token, l.ttl.Milliseconds()).Int()
			cancel()
			if err == nil && n == 0 {
				return
			}
		}
	}()
	return w, nil
}

func (w *watchdogHeld) Release(ctx context.Context) error {
	w.stop()
	<-w.done
	return w.leaseHeld.Release(ctx)
}

// TestCheckDrivesARenewal: a lock that renews by Env.NewTicker keeps its
// lease through a slow section; it breaks only when its renewal is held
// back past the lease (8 steps, one more than without a renewal), or
// when its holder pauses, renewal and all (7).
func TestCheckDrivesARenewal(t *testing.T) {
	l := explore.Lock{Name: "watchdog", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return &watchdogLock{leaseLock{rdb: rdb, ttl: env.TTL}, env}
	}}
	for _, c := range []struct {
		faults explore.Faults
		steps  int
		shows  string
	}{
		{explore.Slow, 8, "-- time passes to 666ms --"},
		{explore.Pause, 7, "** pauses 2001ms **"},
	} {
		r, err := explore.Search(context.Background(), l, explore.Config{MaxClients: 2, Faults: c.faults, Budget: hangGuard})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != explore.Oversold || r.Steps != c.steps || !strings.Contains(r.Diagram(), c.shows) {
			t.Errorf("watchdog under %s: %s in %d steps, want %s in %d showing %q:\n%s", c.faults, r.Verdict, r.Steps, explore.Oversold, c.steps, c.shows, r.Diagram())
		}
	}
}

type labLocker struct{ l lock.Locker }

func (a labLocker) Obtain(ctx context.Context, key string) (explore.Held, error) {
	zero := time.Duration(0)
	l, err := a.l.Obtain(ctx, key, lock.Call{Try: &zero})
	if errors.Is(err, lock.ErrNotObtained) {
		return nil, fmt.Errorf("%w: %w", explore.ErrNotObtained, err)
	}
	return l, err
}

// brokenLock's Obtain fails other than busy once the lock is held.
type brokenLock struct{ leaseLock }

func (b *brokenLock) Obtain(ctx context.Context, key string) (explore.Held, error) {
	h, err := b.leaseLock.Obtain(ctx, key)
	if errors.Is(err, explore.ErrNotObtained) {
		return nil, errors.New("taken") // busy, but not said so
	}
	return h, err
}

// TestCheckSaysWhatCouldNotRun: a lock that does not say busy as
// ErrNotObtained, or panics, fails the check with what it did, not with
// a verdict about it.
func TestCheckSaysWhatCouldNotRun(t *testing.T) {
	broken := explore.Lock{Name: "broken", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return &brokenLock{leaseLock{rdb: rdb, ttl: env.TTL}}
	}}
	rec := &tb{TB: t}
	explore.CheckWith(t, rec, broken, explore.Config{MaxClients: 2, Budget: 10 * time.Second})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "broken: Obtain: taken") {
		t.Errorf("an Obtain that fails: Check reported %q", rec.errs)
	}
	panics := explore.Lock{Name: "panics", New: func(redis.UniversalClient, explore.Env) explore.Locker { return panicLock{} }}
	rec = &tb{TB: t}
	explore.CheckWith(t, rec, panics, explore.Config{MaxClients: 2, Budget: 10 * time.Second})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "client A panicked: boom") {
		t.Errorf("an Obtain that panics: Check reported %q", rec.errs)
	}
}

type panicLock struct{}

func (panicLock) Obtain(context.Context, string) (explore.Held, error) { panic("boom") }

// noLeaseLock is SETNX with no lease, released by DEL: a holder that
// dies leaves it held for ever.
type noLeaseLock struct{ rdb redis.UniversalClient }

func (l noLeaseLock) Obtain(ctx context.Context, key string) (explore.Held, error) {
	ok, err := l.rdb.SetNX(ctx, key, "held", 0).Result()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, explore.ErrNotObtained
	}
	return noLeaseHeld{l.rdb, key}, nil
}

type noLeaseHeld struct {
	rdb redis.UniversalClient
	key string
}

func (h noLeaseHeld) Release(ctx context.Context) error { return h.rdb.Del(ctx, h.key).Err() }

// TestCheckFindsADeadlock: a lock without a lease is found to deadlock
// when its holder crashes: two steps, the probe's rows drawn after them.
func TestCheckFindsADeadlock(t *testing.T) {
	l := explore.Lock{Name: "no-lease", New: func(rdb redis.UniversalClient, _ explore.Env) explore.Locker { return noLeaseLock{rdb} }}
	rec := &tb{TB: t}
	r := explore.CheckWith(t, rec, l, explore.Config{Budget: hangGuard})
	if r.Verdict != explore.Deadlock || r.Steps != 2 || len(rec.errs) != 1 {
		t.Fatalf("no-lease: %s in %d steps, %d errors; want %s in 2, one error", r.Verdict, r.Steps, len(rec.errs), explore.Deadlock)
	}
	if !strings.Contains(rec.errs[0], "** crashes **") || !strings.Contains(rec.errs[0], "never get a lock that no live client holds") {
		t.Errorf("no-lease: the failure does not show the crash and the deadlock:\n%s", rec.errs[0])
	}
}
