package checklock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"

	"example.com/checklock"
)

// The adapter: explore's Locker is Obtain(ctx, key) (explore.Held,
// error), busy as explore.ErrNotObtained; the locks' own Obtain returns
// *checklock.Held and checklock.ErrBusy.
type obtainer interface {
	Obtain(ctx context.Context, key string) (*checklock.Held, error)
}

type adapter struct{ l obtainer }

func (a adapter) Obtain(ctx context.Context, key string) (explore.Held, error) {
	h, err := a.l.Obtain(ctx, key)
	if errors.Is(err, checklock.ErrBusy) {
		return nil, explore.ErrNotObtained
	}
	if err != nil {
		return nil, err
	}
	return h, nil // Release, and Token for Fenced's write
}

var (
	lease = explore.Lock{Name: "lease", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return adapter{&checklock.Lease{RDB: rdb, TTL: env.TTL}}
	}}
	fenced = explore.Lock{Name: "fenced", New: func(rdb redis.UniversalClient, env explore.Env) explore.Locker {
		return adapter{&checklock.Fenced{RDB: rdb, TTL: env.TTL}}
	}}
)

// TestFenced is the test a service keeps: it passes, and with -v its log
// says what the search covered.
func TestFenced(t *testing.T) {
	// Two clients, every schedule of up to 10 steps (Lease breaks in 7):
	// a few seconds, within a budget a loaded machine does not reach.
	r := explore.Check(t, fenced, explore.Config{MaxClients: 2, Depth: 10, Budget: 90 * time.Second})
	if r.Verdict == explore.None && (len(r.Covers) == 0 || r.Covers[0].Depth < 10 || r.Covers[0].Bound == "time") {
		t.Errorf("fenced: covered too little to say: %s", r.Covered())
	}
}

// TestLeaseIsFoundBroken checks Lease with a testing.TB that keeps what
// Check reports: the test would fail, with the shortest schedule that
// oversells, drawn.
func TestLeaseIsFoundBroken(t *testing.T) {
	rec := &recorder{TB: t}
	r := explore.Check(rec, lease, explore.Config{MaxClients: 2, Budget: 30 * time.Second})
	if r.Verdict != explore.Oversold || len(rec.errs) != 1 {
		t.Fatalf("lease: %s, %d errors reported; want %s and one", r.Verdict, len(rec.errs), explore.Oversold)
	}
	for _, want := range []string{"lease: OVERSOLD in 7 steps", "SET lock A1 ex 2 nx  [holds the lock]", "time passes to 2000ms", "SET lock B1 ex 2 nx  [holds the lock while A holds it too]"} {
		if !strings.Contains(rec.errs[0], want) {
			t.Errorf("the failure does not show %q:\n%s", want, rec.errs[0])
		}
	}
	t.Logf("what Check reports:\n%s", rec.errs[0])

	// The same schedule, Lease's own code on a real redis-server (started
	// on a free loopback port; required under CI=true).
	var out strings.Builder
	p, stop, err := explore.StartReplayer(context.Background(), &out, os.Getenv("CI") == "true")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if p == nil {
		t.Skip(strings.TrimSpace(out.String()))
	}
	if got := p.Replay(context.Background(), lease.Target(), r); got != "reproduced" {
		t.Errorf("lease's schedule replayed on redis-server: %s", got)
	}
	if got := p.Replay(context.Background(), fenced.Target(), r); got != "not-reproduced" {
		t.Errorf("lease's schedule replayed on Fenced: %s, want not-reproduced", got)
	}
}

// recorder is a testing.TB whose Errorf is kept, not failed.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(string, ...any) {}
