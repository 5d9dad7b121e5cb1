package explore

import (
	"strings"
	"testing"
)

// TestLinePassesInMemory drives cohort's line by hand: A takes the lock
// through Redis, B waits in A's line, A sells and its release passes the
// lock to B in memory, and B sells under A's lease with a token of its
// own (the global token 1, times 2^20, plus its section's number, 2).
func TestLinePassesInMemory(t *testing.T) {
	tg, err := LookupAny("cohort")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := New(tg, Config{MaxClients: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	a, b := Choice{Kind: Deliver, Client: 0}, Choice{Kind: Deliver, Client: 1}
	ex.driving(func() {
		w, ok := ex.replay(2, []Choice{a, b, a, a, b, b})
		defer w.close()
		if !ok {
			t.Fatal("the schedule could not be taken")
		}
		var rows []string
		acquires := 0
		for _, s := range w.trace {
			who := "-"
			if s.Client >= 0 {
				who = w.clients[s.Client].name
			}
			rows = append(rows, who+": "+s.Event+" -> "+s.Reply+" ["+s.Note+"] lock "+s.Lock)
			if strings.Contains(s.Event, "fair-acquire") {
				acquires++
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
		if acquires != 1 || w.passes != 1 {
			t.Errorf("%d acquisitions in Redis and %d passes, want 1 and 1:\n%s", acquires, w.passes, trace)
		}
		if err := w.broken(); err != nil {
			t.Errorf("broken: %v", err)
		}
	})
}
