package explore_test

import (
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
)

// TestAtomicSafe finds nothing wrong with the ceiling: no lock, the sale
// one script. Every state of three clients with a fault each is seen.
func TestAtomicSafe(t *testing.T) {
	r := run(t, lookup(t, "atomic"), explore.Config{Budget: 30 * time.Second})
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
	tg.Name, tg.Business = "no-lock", explore.Sale
	r := run(t, tg, explore.Config{MaxClients: 2, Budget: 30 * time.Second})
	if r.Verdict != explore.Oversold {
		t.Fatalf("no lock, GET and SET: %s, want %s", r.Verdict, explore.Oversold)
	}
}
