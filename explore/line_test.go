package explore_test

import (
	"strings"
	"testing"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/lockcheck/engine"
)

// TestLinePassesInMemory drives cohort's line by hand: A takes the lock
// through Redis, B waits in A's line, A sells and its release passes the
// lock to B in memory, and B sells under A's lease with a token of its
// own (the global token 1, times 2^20, plus its section's number, 2).
func TestLinePassesInMemory(t *testing.T) {
	ex, err := explore.New(lookup(t, "cohort"), explore.Config{MaxClients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	a, b := explore.Choice{Kind: engine.Deliver, Client: 0}, explore.Choice{Kind: engine.Deliver, Client: 1}
	r, err := ex.Reproduce(2, []explore.Choice{a, b, a, a, b, b})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	acquires, passes := 0, 0
	for _, s := range r.Trace {
		who := "-"
		if s.Client >= 0 {
			who = string(rune('A' + s.Client))
		}
		rows = append(rows, who+": "+s.Event+" -> "+s.Reply+" ["+s.Note+"] lock "+s.Lock)
		if strings.Contains(s.Event, "fair-acquire") {
			acquires++
		}
		if strings.Contains(s.Event, "passed the lock in memory") {
			passes++
		}
	}
	trace := strings.Join(rows, "\n")
	for _, want := range []string{
		"B: waits in its process's line",
		"B: ← passed the lock in memory",
		"B: EVAL fenced-read fence:max stock 1048578",
		"B: EVAL fenced-write fence:max stock sold 1048578 8 -> [1 1048578] [sold one] lock A1",
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("no %q in\n%s", want, trace)
		}
	}
	if acquires != 1 || passes != 1 {
		t.Errorf("%d acquisitions in Redis and %d passes, want 1 and 1:\n%s", acquires, passes, trace)
	}
	if r.Verdict != explore.None {
		t.Errorf("%s: %s", r.Verdict, r.Violation)
	}
}
