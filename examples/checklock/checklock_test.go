package checklock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lockcheck"

	"example.com/checklock"
)

// The adapter, whole: lockcheck's Locker is Obtain(ctx, key)
// (lockcheck.Held, error), busy as lockcheck.ErrNotObtained; the locks'
// own Lock returns *checklock.Held and checklock.ErrBusy, and unlocks by
// Unlock. The held value keeps the lock's own, so that the section gets
// its Fence.
type locker interface {
	Lock(ctx context.Context, key string) (*checklock.Held, error)
}

type adapter struct{ l locker }

type held struct{ *checklock.Held }

func (h held) Release(ctx context.Context) error { return h.Unlock(ctx) }

// Token is the lock's fencing token (Lock.Fenced declares it).
func (h held) Token() int64 { return h.Fence() }

func (a adapter) Obtain(ctx context.Context, key string) (lockcheck.Held, error) {
	h, err := a.l.Lock(ctx, key)
	if errors.Is(err, checklock.ErrBusy) {
		return nil, fmt.Errorf("%w: %w", lockcheck.ErrNotObtained, err)
	}
	if err != nil {
		return nil, err
	}
	return held{h}, nil
}

// transfers is the service's own business: each client moves 10 from
// alice to bob under the lock; whatever the schedule, no money is made
// or lost.
var transfers = &lockcheck.Section{
	Init: map[string]string{"alice": "100", "bob": "0"},
	Keys: []string{"alice", "bob"},
	Run: func(ctx context.Context, rdb redis.UniversalClient, h lockcheck.Held) error {
		return checklock.Transfer(ctx, rdb, h.(held).Held, "alice", "bob", 10)
	},
	Invariant: func(v map[string]string) error {
		a, _ := strconv.Atoi(v["alice"])
		b, _ := strconv.Atoi(v["bob"])
		if a+b != 100 {
			return fmt.Errorf("alice %d + bob %d = %d: money was made or lost", a, b, a+b)
		}
		return nil
	},
}

var (
	lease = lockcheck.Lock{Name: "lease", Section: transfers, New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return adapter{&checklock.Lease{RDB: rdb, TTL: env.TTL, Wait: time.Minute}}
	}}
	fenced = lockcheck.Lock{Name: "fenced", Section: transfers, Fenced: true, New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
		return adapter{&checklock.Fenced{RDB: rdb, TTL: env.TTL, Wait: time.Minute}}
	}}
)

// TestFenced is the test a service keeps: it passes, and with -v its log
// says what the search covered.
func TestFenced(t *testing.T) {
	// Two clients, every schedule of up to 9 steps under each stage of
	// faults (Lease breaks in 9).
	lockcheck.Check(t, fenced, lockcheck.Config{Clients: 2, Depth: 9, Budget: 5 * time.Minute})
}

// TestLeaseIsFoundBroken explores Lease (Explore: the verdict without
// failing the test): a transfer that outlives its lease, and money
// appears. Check would fail the test with the report shown here.
func TestLeaseIsFoundBroken(t *testing.T) {
	r, err := lockcheck.Explore(t, lease, lockcheck.Config{Clients: 2, Budget: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("what Check reports:\n%s", r)
	if r.Verdict != "VIOLATED" || !strings.Contains(r.Violation, "money was made or lost") {
		t.Fatalf("lease: %s (%s), want VIOLATED", r.Verdict, r.Violation)
	}
	if r.Replay != "reproduced" && (os.Getenv("CI") == "true" || !strings.Contains(r.Replay, "redis-server not found")) {
		t.Errorf("lease's schedule on redis-server: %s", r.Replay)
	}
}
