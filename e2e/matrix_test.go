package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/suite"
)

// TestMatrix is `make matrix`, smaller: every pair of scenario and lock the
// ladder gives a verdict for runs on a fresh stack per scenario, three
// scenarios at once (real redis-server and nginx when installed, required
// under CI=true), and each row's verdict, computed from the counters read
// back and the answers received, must be the ladder's.
func TestMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the matrix takes about two minutes")
	}
	// A quarter of make matrix's 5000 x 100 and stock 1000. Not smaller: a
	// fault must strike while there is stock to oversell, and check-del's
	// stale DEL (600ms after its request) oversells only when it finds
	// another holder mid-sale, not one of the other armed requests holding
	// the lock through their pause: with stock 150 the run is so short
	// that it sometimes found none and check-del looked SAFE.
	const requests, concurrency, stock = 1200, 40, 300
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// crash-wait runs at make matrix's full size: del-setnx's double
	// grant needs many waiters polling when the dead holder's lock
	// expires; at 40 it showed in one run of three.
	const fullSize = "crash-wait"
	size := func(scenario string) int {
		if scenario == fullSize {
			return 5000
		}
		return requests
	}

	// The lab's rungs (the PostgreSQL ones among them) and rueidislock,
	// whose four pairs take seconds each. The other library rungs' pairs
	// (31, some stalling 15s) would not fit this test's ten minutes on two
	// cores: make matrix runs them, and their tests in lock/ show each
	// one's flaw.
	var locks []string
	for _, l := range suite.LadderLocks() {
		if !slices.Contains(suite.LibraryLocks(), l) || l == "rueidislock" {
			locks = append(locks, l)
		}
	}

	ss := &stacks{t: t}
	start := time.Now()
	rows, skips, err := suite.RunMatrix(ctx, suite.MatrixConfig{
		Locks:       locks,
		Requests:    requests,
		Concurrency: concurrency,
		Stock:       stock,
		Size: func(scenario string) (int, int, int) {
			if scenario == fullSize {
				return 5000, 100, 1000
			}
			return 0, 0, 0
		},
		Lanes:       matrixLanes,
		Stack:       ss.template(),
		RequireReal: redistest.CI(),
		Start:       ss.start,
		Progress:    logWriter{t},
	})
	took := time.Since(start)
	var grid strings.Builder
	suite.WriteGrid(&grid, rows, skips, took)
	t.Log("\n" + grid.String())
	if err != nil {
		t.Fatalf("matrix: %v", err)
	}

	// The rows first, the checks of the whole run last: CI shows the
	// head and the tail of a long log, and a failure must be in one.
	var failed []string
	for _, r := range rows {
		name := r.Scenario + "/" + r.Lock
		if !t.Run(name, func(t *testing.T) {
			if r.Expected == "" || r.Verdict != r.Expected {
				t.Errorf("verdict %s, the ladder says %q (row %+v)", r.Verdict, r.Expected, r)
			}
			answered := r.OK
			for _, n := range r.Codes {
				answered += n
			}
			if answered != r.Requests || (!r.Stopped && r.Requests != size(r.Scenario)) {
				t.Errorf("requests %d, answers %d (ok %d, codes %v), stopped %v: want all %d accounted for",
					r.Requests, answered, r.OK, r.Codes, r.Stopped, size(r.Scenario))
			}
			switch {
			case r.Verdict == bench.VerdictDeadlock:
				// Stopped once nothing got through for the bound (3s).
				if !r.Stopped || r.StallMs <= r.StallBoundMs || r.StallBoundMs != 3000 {
					t.Errorf("DEADLOCK without a stop past the bound: stall %.0fms, bound %.0fms, stopped %v",
						r.StallMs, r.StallBoundMs, r.Stopped)
				}
			case r.Scenario == "masters-down":
				// Two of five masters down: a majority is left, sales go on.
				if r.StallMs >= 3000 {
					t.Errorf("stalled %.0fms with 2 of 5 masters down: want progress", r.StallMs)
				}
			case r.Scenario == "masters-down-3":
				// No majority: mostly 503s, and nothing sold twice.
				if r.Codes["503"] <= r.OK || r.Oversold != 0 {
					t.Errorf("with 3 of 5 masters down: ok %d, 503s %d, oversold %d; want mostly 503s and 0 oversold",
						r.OK, r.Codes["503"], r.Oversold)
				}
			}
			if sc := scenario(t, r.Scenario); len(sc.ArmAt) > 0 && len(r.Armed) == 0 {
				t.Errorf("no request carried the scenario's fault")
			}
			if r.Verdict == bench.VerdictOversold && r.Oversold <= 0 {
				t.Errorf("OVERSOLD with oversold %d", r.Oversold)
			}
		}) {
			failed = append(failed, fmt.Sprintf("%s (%s, ladder %s)", name, r.Verdict, r.Expected))
		}
	}
	// Every stack stopped, every process it started gone.
	ss.checkGone()

	// Every pair the ladder lists was run: none skipped (say, because the
	// app does not offer a lock yet).
	want := 0
	for _, sc := range suite.Scenarios() {
		for l := range sc.Expect {
			if slices.Contains(locks, l) {
				want++
			}
		}
	}
	for _, s := range skips {
		for _, sc := range suite.Scenarios() {
			if _, listed, _ := sc.Expected(s.Lock, bench.EndpointSale); sc.Name == s.Scenario && listed {
				// ZooKeeper and MariaDB are not embedded: where they
				// are not installed their rungs are skipped, and say
				// why. CI installs them.
				if !ci && strings.HasPrefix(s.Reason, "unavailable here") {
					t.Logf("%s %s: skipped (%s)", s.Scenario, s.Lock, s.Reason)
					want--
					continue
				}
				t.Errorf("%s %s: skipped (%s), but the ladder lists it", s.Scenario, s.Lock, s.Reason)
			}
		}
	}
	if len(rows) != want {
		t.Errorf("%d rows, want the %d pairs the ladder lists", len(rows), want)
	}

	t.Logf("matrix of %d runs took %s", len(rows), took.Round(time.Second))
	if len(failed) > 0 {
		t.Errorf("%d of %d rows failed: %s", len(failed), len(rows), strings.Join(failed, ", "))
	}
}

// matrixLanes is how many scenarios' stacks the matrix runs at once. Most
// of its time is waiting (a frozen holder, a stall to bound, a crashed
// instance back), so three lanes end in about the time of the longest
// scenario; each scenario still runs its locks one after the other on a
// fresh stack of its own, as it would alone. More lanes put more of the
// throughput runs beside the stagings on two cores (lua's 200ms lease
// under check-pause holds only while its instance gets the CPU:
// docs/scenarios.md).
const matrixLanes = 3

func scenario(t *testing.T, name string) suite.Scenario {
	t.Helper()
	s, err := suite.LookupScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
