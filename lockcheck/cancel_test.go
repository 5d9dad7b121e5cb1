package lockcheck_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lockcheck"
)

// noLease is a lock without a lease, as one writes it for sections
// that may run long: SET NX with a token, no expiry, released by a
// compare-and-delete script. Its Obtain cleans up after an error, on a
// context the request's end does not cancel (the SET may have run).
// Its Release, unless detach, runs on the context it is given: cancelled
// before its script is sent, it gives up and leaves the key for ever.
type noLease struct {
	rdb    redis.UniversalClient
	detach bool
}

type noLeaseHeld struct {
	l          noLease
	key, token string
}

func (l noLease) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	token := newToken()
	for {
		ok, err := l.rdb.SetNX(ctx, key, token, 0).Result()
		if err != nil {
			_ = releaseScript.Run(context.WithoutCancel(ctx), l.rdb, []string{key}, token).Err()
			return nil, err
		}
		if ok {
			return noLeaseHeld{l, key, token}, nil
		}
		time.Sleep(retry)
	}
}

func (h noLeaseHeld) Release(ctx context.Context) error {
	if h.l.detach {
		ctx = context.WithoutCancel(ctx)
	}
	return releaseScript.Run(ctx, h.l.rdb, []string{h.key}, h.token).Err()
}

var (
	noLeaseLock = lockcheck.Lock{Name: "no-lease", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return noLease{rdb: rdb}
	}}
	noLeaseDetachedLock = lockcheck.Lock{Name: "no-lease-detached", New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return noLease{rdb: rdb, detach: true}
	}}
)

// TestCancel: a context cancelled at a command of Obtain or Release.
// SETNX then EXPIRE, whose Obtain returns on an error without cleaning
// up, and the lock without a lease whose Release gives up on its
// cancelled context, each leave a key no client can ever take again
// (LEAKED), found only with the fault. SET NX PX with a Lua release
// leaves a key that expires (no leak) and never two owners; the lock
// without a lease whose cleanup and release outlive the request's
// context, neither.
func TestCancel(t *testing.T) {
	for _, c := range []struct {
		lock    lockcheck.Lock
		faults  lockcheck.Faults
		verdict string
		steps   int
		token   string // the schedule's steps, from the token
	}{
		{lock: setnxExpireLock, faults: lockcheck.Faults{lockcheck.Late}, verdict: "none"},
		// A's SETNX runs, and its context is cancelled before the reply:
		// its Obtain returns the error, and its EXPIRE is never sent.
		{lock: setnxExpireLock, faults: lockcheck.Faults{lockcheck.Late, lockcheck.Cancel}, verdict: "LEAKED", steps: 1, token: "kA"},
		{lock: noLeaseLock, faults: lockcheck.Faults{lockcheck.Late}, verdict: "none"},
		// A sells; its Release's context is cancelled before its script
		// is sent.
		{lock: noLeaseLock, faults: lockcheck.Faults{lockcheck.Late, lockcheck.Cancel}, verdict: "LEAKED", steps: 4, token: "A.A.A.cA"},
		{lock: noLeaseDetachedLock, faults: lockcheck.Faults{lockcheck.Late, lockcheck.Cancel}, verdict: "none"},
		{lock: luaLock, faults: lockcheck.Faults{lockcheck.Late, lockcheck.Cancel}, verdict: "none"},
	} {
		name := fmt.Sprintf("%s/%s", c.lock.Name, c.faults)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Two clients: a leak needs one client that gives up and one
			// that waits for ever; a second owner, two.
			r, err := lockcheck.Explore(t, c.lock, lockcheck.Config{Faults: c.faults, Clients: 2, Budget: hangGuard})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", r)
			if r.Verdict != c.verdict || r.Steps != c.steps {
				t.Fatalf("%s: %s in %d steps, want %s in %d", name, r.Verdict, r.Steps, c.verdict, c.steps)
			}
			if r.Verdict == "none" {
				if !strings.Contains(r.Coverage, "2 clients: every state") || r.CutShort {
					t.Errorf("%s: covered too little to say: %s", name, r.Coverage)
				}
				for _, want := range []string{"a context cancelled before a command in", "a context cancelled after a command ran in"} {
					if c.faults[len(c.faults)-1] == lockcheck.Cancel && !strings.Contains(r.Coverage, want) {
						t.Errorf("%s: the search never took %q: %s", name, want, r.Coverage)
					}
				}
				return
			}
			if !strings.HasSuffix(r.Token, ":"+c.token) || !strings.Contains(r.String(), "held by no client") {
				t.Errorf("%s: token %q (want its steps %s), report:\n%s", name, r.Token, c.token, r)
			}
			wantReplayed(t, r)
		})
	}
}

// TestLostReplyEndsTheClient: an Obtain whose reply was lost and that
// gives up with the error is a request that timed out, not a fault of
// the lock's code. SETNX then EXPIRE, whose SETNX ran without its sender
// knowing, leaves a key without a TTL (LEAKED); the lock without a
// lease, whose Obtain deletes its own key after an error, leaves none.
func TestLostReplyEndsTheClient(t *testing.T) {
	for _, c := range []struct {
		lock    lockcheck.Lock
		verdict string
		steps   int
		token   string
	}{
		{lock: setnxExpireLock, verdict: "LEAKED", steps: 1, token: "lA"},
		{lock: noLeaseLock, verdict: "none"},
	} {
		t.Run(c.lock.Name, func(t *testing.T) {
			t.Parallel()
			r, err := lockcheck.Explore(t, c.lock, lockcheck.Config{Faults: lockcheck.Faults{lockcheck.Late, lockcheck.Lost}, Clients: 2, Budget: hangGuard})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", r)
			if r.Verdict != c.verdict || r.Steps != c.steps {
				t.Fatalf("%s: %s in %d steps, want %s in %d", c.lock.Name, r.Verdict, r.Steps, c.verdict, c.steps)
			}
			if r.Verdict == "none" {
				if !strings.Contains(r.Coverage, "2 clients: every state") || r.CutShort {
					t.Errorf("%s: covered too little to say: %s", c.lock.Name, r.Coverage)
				}
				return
			}
			if !strings.HasSuffix(r.Token, ":"+c.token) || !strings.Contains(r.String(), "lost reply") {
				t.Errorf("%s: token %q (want its steps %s), report:\n%s", c.lock.Name, r.Token, c.token, r)
			}
			wantReplayed(t, r)
		})
	}
}
