package lockcheck_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/racebuild"
	"github.com/lockladder/lockladder/lockcheck"
)

// hangGuard bounds a search that ends by its own bound (a depth, a
// verdict), however loaded the machine: only a bug reaches it.
const hangGuard = 10 * time.Minute

// rec is what Check would say, kept instead of failing the test.
type rec struct {
	mu         sync.Mutex
	errs, logs []string
}

func (r *rec) Helper() {}

func (r *rec) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *rec) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// wantReplayed: each verdict was replayed on redis-server, and agreed
// (required under CI=true, where the servers are installed).
func wantReplayed(t *testing.T, r lockcheck.Result) {
	t.Helper()
	for _, f := range append([]lockcheck.Result{r}, r.Also...) {
		if f.Replay != "reproduced" && (os.Getenv("CI") == "true" || !strings.HasPrefix(f.Replay, "not replayed: redis-server not found")) {
			t.Errorf("%s under %s replayed on redis-server: %q", f.Verdict, f.Faults, f.Replay)
		}
	}
}

// TestTheIssuesLocks checks the locks engineers write (locks_test.go),
// in parallel, each with a Redis of its own, and gets each its verdict:
// the one a unit test, go test -race and a load test all miss. Each
// search runs in full under -race too: check-del's and the breaker's own
// bugs take three clients and 12 and 13 steps, so no smaller search
// finds them.
func TestTheIssuesLocks(t *testing.T) {
	for _, c := range []struct {
		lock    lockcheck.Lock
		faults  lockcheck.Faults
		clients int
		verdict string
		steps   int
		also    string // the later stage's, by default faults: "OVERSOLD 7"
	}{
		// A holder that dies between SETNX and EXPIRE.
		{lock: setnxExpireLock, faults: lockcheck.Faults{lockcheck.Crash, lockcheck.Late}, verdict: "DEADLOCK", steps: 2},
		// The blocking GET-compare-DEL: its own bug (the lock passes to B
		// between A's GET and DEL) first, then the lease every lease shares.
		{lock: checkDelLock, verdict: "OVERSOLD", steps: 12, also: "OVERSOLD 7"},
		// SET NX PX with a Lua release: safe while sections fit the lease,
		// broken by a pause (Kleppmann's).
		{lock: luaLock, faults: lockcheck.Faults{lockcheck.Crash, lockcheck.Late}, clients: 2, verdict: "none"},
		{lock: luaLock, faults: lockcheck.Faults{lockcheck.Pause}, verdict: "OVERSOLD", steps: 7},
		// The stuck-lock breaker: a PTTL of -2 is a lock that has just
		// gone, and its DEL frees the next holder's.
		{lock: breakerLock, faults: lockcheck.Faults{lockcheck.Crash, lockcheck.Late}, verdict: "OVERSOLD", steps: 13},
		// Expiry stamps read from time.Now: the check's clock, so its real
		// oversell, a lease outlived, is found (the wall clock gave a false
		// DEADLOCK).
		{lock: stampLock, faults: lockcheck.Faults{lockcheck.Slow}, verdict: "OVERSOLD", steps: 10},
		// The retried unlock (etcd issue 22082's kind): a DEL of its own
		// lock, sent again after a timeout. Safe while every reply comes
		// back; a reply lost after the DEL ran, and the retry deletes the
		// next holder's lock.
		{lock: retriedDelLock, faults: lockcheck.Faults{lockcheck.Crash}, clients: 2, verdict: "none"},
		{lock: retriedDelLock, faults: lockcheck.Faults{lockcheck.Crash, lockcheck.Lost}, verdict: "OVERSOLD", steps: 11},
	} {
		name := fmt.Sprintf("%s/%s", c.lock.Name, c.faults)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := lockcheck.Explore(t, c.lock, lockcheck.Config{Faults: c.faults, Clients: c.clients, Budget: hangGuard})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", r)
			if r.Verdict != c.verdict || r.Steps != c.steps {
				t.Fatalf("%s: %s in %d steps, want %s in %d", name, r.Verdict, r.Steps, c.verdict, c.steps)
			}
			if c.also != "" && (len(r.Also) != 1 || fmt.Sprintf("%s %d", r.Also[0].Verdict, r.Also[0].Steps) != c.also) {
				t.Errorf("%s: also found %d more, want %s", name, len(r.Also), c.also)
			}
			if r.Verdict == "none" {
				if !strings.Contains(r.Coverage, "2 clients: every state") || r.CutShort {
					t.Errorf("%s: covered too little to say: %s", name, r.Coverage)
				}
				return
			}
			if !strings.HasPrefix(r.Token, "lc1:") || !strings.Contains(r.String(), r.Token) {
				t.Errorf("%s: no replay token in the report:\n%s", name, r)
			}
			wantReplayed(t, r)
		})
	}
}

// TestTheStampLocksOwnBug: by default the stamp lock's own bug (two
// clients that both find the stamp passed, both DEL, both SETNX) comes
// first, the lease it outlives after.
//
// The search of three clients to depth 14 is pure CPU that the race
// detector makes many times dearer. Under -race the same two stages run
// with two clients, which drives the same engine and lock code: the own
// bug needs a third client, so the first stage finds nothing to depth 14
// and the lease's 10 steps come first. The three clients' search runs in
// the pass without -race (make test-embedded RACE=, CI's second pass).
func TestTheStampLocksOwnBug(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of three clients to depth 14")
	}
	if racebuild.Enabled {
		r, err := lockcheck.Explore(t, stampLock, lockcheck.Config{Clients: 2, Budget: hangGuard, NoReplay: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict != "OVERSOLD" || r.Steps != 10 || r.Faults != "crash,slow,pause,skew" || len(r.Also) != 0 ||
			!strings.Contains(r.Coverage, "faults crash,late: 2 clients: every schedule to depth 14") {
			t.Fatalf("stamp, two clients: %s in %d steps under %s, then %d more; want none to depth 14 under crash,late, then OVERSOLD in 10:\n%s", r.Verdict, r.Steps, r.Faults, len(r.Also), r)
		}
		return
	}
	r, err := lockcheck.Explore(t, stampLock, lockcheck.Config{Budget: hangGuard, NoReplay: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "OVERSOLD" || r.Steps != 14 || r.Faults != "crash,late" || len(r.Also) != 1 || r.Also[0].Steps != 10 {
		t.Fatalf("stamp: %s in %d steps under %s, then %d more; want OVERSOLD in 14 under crash,late, then the lease's 10:\n%s", r.Verdict, r.Steps, r.Faults, len(r.Also), r)
	}
}

// TestAWrapperThatDropsTheTokenIsRefused: a fenced lock behind an adapter
// that hides its Token is an error that says so, not a verdict.
func TestAWrapperThatDropsTheTokenIsRefused(t *testing.T) {
	r := &rec{}
	res := lockcheck.CheckWith(t, r, wrappedLock, lockcheck.Config{Clients: 2, Budget: hangGuard})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "declared Fenced, but its Obtain returned a lockcheck_test.wrappedHeld, which has no Token() int64") {
		t.Fatalf("the wrapper: %q", r.errs)
	}
	if res.Verdict != "" {
		t.Errorf("the wrapper got a verdict: %s", res.Verdict)
	}
}

// TestTheFencedLockPasses: the same lease with a fencing token its
// writes carry: nothing found, every state of two clients seen, and
// the log says so.
//
// Every schedule to depth 9 is pure CPU that the race detector makes
// many times dearer: under -race the search stops at depth 7, past the 7
// steps in which the lease alone oversells, and the pass without -race
// (make test-embedded RACE=) searches to 9.
func TestTheFencedLockPasses(t *testing.T) {
	depth := 9
	if racebuild.Enabled {
		depth = 7
	}
	r := &rec{}
	res := lockcheck.CheckWith(t, r, fencedLock, lockcheck.Config{Clients: 2, Depth: depth, Budget: hangGuard})
	if len(r.errs) != 0 || res.Verdict != "none" {
		t.Fatalf("fenced: %s, %q", res.Verdict, r.errs)
	}
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], "no violation found") || !strings.Contains(r.logs[0], "faults crash,late: 2 clients") ||
		!strings.Contains(r.logs[0], "faults crash,slow,pause,skew: 2 clients") || !strings.Contains(r.logs[0], "steps taken: a crash in") {
		t.Errorf("the log does not say what was covered: %q", r.logs)
	}
}

// TestABudgetThatRunsOutFails: a search cut short by its budget fails
// the check, saying how far it came, unless a time-boxed search was
// asked for.
func TestABudgetThatRunsOutFails(t *testing.T) {
	r := &rec{}
	res := lockcheck.CheckWith(t, r, fencedLock, lockcheck.Config{Budget: 300 * time.Millisecond})
	if !res.CutShort || len(r.errs) != 1 || !strings.Contains(r.errs[0], "ran out before the search reached its depth: no verdict") {
		t.Fatalf("a budget that runs out: cut short %v, %q", res.CutShort, r.errs)
	}
	r = &rec{}
	res = lockcheck.CheckWith(t, r, fencedLock, lockcheck.Config{Budget: 300 * time.Millisecond, TimeBox: true})
	if !res.CutShort || len(r.errs) != 0 || len(r.logs) != 1 || !strings.Contains(r.logs[0], "cut short by its budget") {
		t.Fatalf("a time-boxed search: cut short %v, %q, %q", res.CutShort, r.errs, r.logs)
	}
}

// TestNoFaultsMeansNone: an empty set of faults is none (the
// interleavings alone: the Lua lease is then safe), and a fault the
// check does not know is an error.
func TestNoFaultsMeansNone(t *testing.T) {
	r, err := lockcheck.Explore(t, luaLock, lockcheck.Config{Faults: lockcheck.Faults{}, Budget: hangGuard})
	if err != nil || r.Verdict != "none" || !strings.Contains(r.Coverage, "faults none") {
		t.Fatalf("no faults: %v, %s, %s", err, r.Verdict, r.Coverage)
	}
	if _, err := lockcheck.Explore(t, luaLock, lockcheck.Config{Faults: lockcheck.Faults{"partition"}}); err == nil || !strings.Contains(err.Error(), `no fault "partition"`) {
		t.Errorf("an unknown fault: %v", err)
	}
}

// TestTheErrorsOfTheLocksOwnCode: an Obtain that fails other than busy,
// or panics, fails the check with what it did, not with a verdict.
func TestTheErrorsOfTheLocksOwnCode(t *testing.T) {
	r := &rec{}
	lockcheck.CheckWith(t, r, brokenLock, lockcheck.Config{Clients: 2, Budget: hangGuard})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "broken: Obtain: taken") {
		t.Errorf("an Obtain that fails: %q", r.errs)
	}
	r = &rec{}
	lockcheck.CheckWith(t, r, panicLock, lockcheck.Config{Clients: 2, Budget: hangGuard})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "client A panicked: boom") {
		t.Errorf("an Obtain that panics: %q", r.errs)
	}
}

// TestAReplayThatDisagreesFails: a verdict the same schedule does not
// reproduce on a real redis-server is no verdict: the check fails with
// both results.
func TestAReplayThatDisagreesFails(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("redis-server not installed (apt-get install redis-server)")
	}
	r := &rec{}
	res := lockcheck.CheckWith(t, r, inTheBubbleLock, lockcheck.Config{Faults: lockcheck.Faults{}, Clients: 2, Budget: hangGuard})
	if res.Verdict != "OVERSOLD" || res.Replay != "not-reproduced" {
		t.Fatalf("bubble-only: %s, replayed on redis-server: %q; want OVERSOLD, not-reproduced\n%q %q", res.Verdict, res.Replay, r.errs, r.logs)
	}
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "but the same schedule on a real redis-server was not-reproduced") ||
		!strings.Contains(r.errs[0], "OVERSOLD in") {
		t.Fatalf("the disagreement is not the check's failure, with both results: %q", r.errs)
	}
	t.Logf("what Check says:\n%s", r.errs[0])
}

// TestASectionMustSayWhatHolds: a Section without its run, its
// invariant or the keys the invariant reads is an error before any
// search, naming what is missing.
func TestASectionMustSayWhatHolds(t *testing.T) {
	run := func(context.Context, redis.UniversalClient, lockcheck.Held) error { return nil }
	inv := func(map[string]string) error { return nil }
	for _, c := range []struct {
		s    lockcheck.Section
		want string
	}{
		{lockcheck.Section{Keys: []string{"a"}, Invariant: inv}, "Section.Run is nil"},
		{lockcheck.Section{Keys: []string{"a"}, Run: run}, "Section.Invariant is nil"},
		{lockcheck.Section{Run: run, Invariant: inv}, "Section.Keys is empty"},
	} {
		l := luaLock
		l.Section = &c.s
		if _, err := lockcheck.Explore(t, l, lockcheck.Config{Clients: 2}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}
