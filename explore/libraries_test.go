package explore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/explore"
)

// TestFindsTheLibrariesFlaws explores the libraries' own code (redsync,
// bsm/redislock, redislock with its Refresh), their go-redis clients the
// explorer's, gated: each is found as the ladder says, in the shortest
// schedule, their random tokens named as the lab's UUIDs are; and each
// counterexample happens on a real redis-server too.
func TestFindsTheLibrariesFlaws(t *testing.T) {
	cases := []struct {
		name, obtain string
	}{
		{"redsync", "SET lock A1 ex 2 nx  [holds the lock]"},                     // a business past its lease
		{"redislock", "EVAL redislock-obtain lock A1 22 2000  [holds the lock]"}, // the same
		{"redislock-refresh", "** pauses 2001ms **"},                             // A paused, its Refresh with it
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := search(t, c.name)
			if r.Verdict != explore.Oversold || r.Steps != 7 || r.Clients != 2 {
				t.Fatalf("%s: %s in %d steps with %d clients, want %s in 7 with 2", c.name, r.Verdict, r.Steps, r.Clients, explore.Oversold)
			}
			if d := r.Diagram(); !strings.Contains(d, c.obtain) || !strings.Contains(d, "B1") {
				t.Errorf("%s: the diagram does not show %q and B's token:\n%s", c.name, c.obtain, d)
			}
		})
	}
	p := replayer(t)
	if p == nil {
		t.Skip("no redis-server to replay on")
	}
	for _, c := range cases {
		if got := p.Replay(context.Background(), lookup(t, c.name), search(t, c.name)); got != "reproduced" {
			t.Errorf("%s's counterexample replayed on redis-server: %s", c.name, got)
		}
	}
}

// TestRedislockRefreshIsDriven: the refresh loop ticks on the search's
// clock (Options.Ticker), so a business past its lease is not enough to
// oversell redislock-refresh as it oversells redislock (7 steps): its
// shortest schedule under slow is one step longer, its Refresh due at a
// third of the lease and held back (a renewal late by a lease) while the
// lease runs out, as rung 9's watchdog's is.
func TestRedislockRefreshIsDriven(t *testing.T) {
	tg := lookup(t, "redislock-refresh")
	r := run(t, tg, explore.Config{MaxClients: 2, Faults: explore.Slow, Budget: hangGuard})
	if r.Verdict != explore.Oversold || r.Steps != 8 {
		t.Fatalf("redislock-refresh under slow: %s in %d steps, want %s in 8 (a held-back Refresh)", r.Verdict, r.Steps, explore.Oversold)
	}
	if d := r.Diagram(); !strings.Contains(d, "-- time passes to 666ms --") {
		t.Errorf("redislock-refresh under slow: no refresh due at 666ms in:\n%s", d)
	}
}
