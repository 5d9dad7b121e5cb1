package explore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/racebuild"
	"github.com/lockladder/lockladder/inventory"
)

// TestAtomicSafe finds nothing wrong with the ceiling: no lock, the sale
// one script. Every state of three clients with a fault each is seen.
func TestAtomicSafe(t *testing.T) {
	r := run(t, lookup(t, "atomic"), explore.Config{Budget: hangGuard})
	if r.Verdict != explore.None {
		t.Fatalf("atomic: %s in %d steps", r.Verdict, r.Steps)
	}
	if len(r.Covers) != 2 || r.Covers[1].Clients != 3 || r.Covers[1].Bound != "exhausted" || r.Schedules < 10 {
		t.Errorf("atomic: covered too little to say: %s", r.Covered())
	}
}

// TestNoLockOversells is the atomic target with the articles' sale (GET,
// check, SET) in place of the script: with no lock it oversells, so the
// none above is the script's doing, not a search that cannot see.
func TestNoLockOversells(t *testing.T) {
	tg := lookup(t, "atomic")
	tg.Name = "no-lock"
	tg.Business = business(tg, explore.Sale)
	r := run(t, tg, explore.Config{MaxClients: 2, Budget: hangGuard})
	if r.Verdict != explore.Oversold {
		t.Fatalf("no lock, GET and SET: %s, want %s", r.Verdict, explore.Oversold)
	}
}

// TestCohortSafe finds nothing wrong with cohort: A and B are requests
// of one process, B waits in A's line, and the search sees A pass the
// lock to B in memory. Each section's write is fenced with a token of
// its own. The same cohort with a sale that ignores its token oversells
// once a process of its own (C) is there to take the lock: the none is
// the fence's doing, not a search that cannot see a cohort's sections.
func TestCohortSafe(t *testing.T) {
	// Depth 8: a pass takes 4 steps; every schedule to 8 is searched,
	// however long the machine takes (hangGuard). That is pure CPU the
	// race detector makes many times dearer: under -race the search
	// stops at 6, past a pass, and the pass without -race (make
	// test-embedded RACE=) searches to 8.
	depth := 8
	if racebuild.Enabled {
		depth = 6
	}
	r := run(t, lookup(t, "cohort"), explore.Config{MaxClients: 2, Depth: depth, Budget: hangGuard})
	if r.Verdict != explore.None {
		t.Fatalf("cohort: %s in %d steps", r.Verdict, r.Steps)
	}
	if r.States < 100 || len(r.Covers) != 1 || r.Covers[0].Depth < depth {
		t.Errorf("cohort: covered too little to say: %s", r.Covered())
	}
	// The passing is searched, and what it covered says so.
	if r.Passed == 0 {
		t.Errorf("cohort: no schedule passed the lock in memory: %s", r.Covered())
	}
	if c := r.Covered(); !strings.Contains(c, "A and B requests of one process") || !strings.Contains(c, "not explored: its speed layer") {
		t.Errorf("cohort's coverage does not say what it covered of the line: %s", c)
	}

	tg := lookup(t, "cohort")
	tg.Name = "cohort-unfenced"
	tg.Business = business(tg, func(ctx context.Context, rdb redis.UniversalClient, _ explore.Held) error {
		_, err := inventory.New(rdb).Sell(ctx, inventory.Guard{})
		return err
	})
	// Two clients are one process: the oversell needs C. Pauses only,
	// and 7 steps: the search with two is over quickly, and three reach
	// the counterexample's depth under the race detector.
	r = run(t, tg, explore.Config{Depth: 7, Faults: explore.Pause, Budget: hangGuard})
	if r.Verdict != explore.Oversold || r.Clients != 3 {
		t.Fatalf("cohort with an unfenced sale: %s with %d clients, want %s with 3 (%s)", r.Verdict, r.Clients, explore.Oversold, r.Covered())
	}
	t.Logf("cohort with an unfenced sale: %s in %d steps", r.Verdict, r.Steps)

	// Replayed with the real clients on a redis-server, the line and all.
	p := replayer(t)
	if p == nil {
		t.Skip("no redis-server to replay on")
	}
	if got := p.Replay(context.Background(), tg, r); got != "reproduced" {
		t.Errorf("cohort with an unfenced sale, replayed on redis-server: %s", got)
	}
	if got := p.Replay(context.Background(), lookup(t, "cohort"), r); got != "not-reproduced" {
		t.Errorf("the unfenced sale's schedule replayed on cohort's fenced sale: %s, want not-reproduced", got)
	}
}

// business is tg's business with run in place of its section.
func business(tg explore.Target, run func(context.Context, redis.UniversalClient, explore.Held) error) *explore.Business {
	b := *tg.Business
	b.Run = run
	return &b
}
