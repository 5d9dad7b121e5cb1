package suite_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/suite"
)

// The ladder's lines come out scenario by scenario in the ladder's order,
// whatever order the runs finished in, each with its lock's flaw on one
// line; the scenario is named once per group.
func TestWriteLadderGroupsByScenario(t *testing.T) {
	rows := []bench.Row{ // as two groups side by side finish them
		{Scenario: "pause-session", Lock: "zookeeper", Endpoint: "sale", Verdict: "OVERSOLD", Expected: "OVERSOLD", Oversold: 3},
		{Scenario: "slow", Lock: "lua", Endpoint: "sale", Verdict: "OVERSOLD", Expected: "OVERSOLD", Oversold: 7},
		{Scenario: "crash", Lock: "setnx", Endpoint: "sale", Verdict: "DEADLOCK", Expected: "DEADLOCK", StallMs: 3100},
		{Scenario: "slow", Lock: "setnx-px", Endpoint: "sale", Verdict: "OVERSOLD", Expected: "OVERSOLD", Oversold: 2},
		{Scenario: "normal", Lock: "none", Endpoint: "sale", Verdict: "OVERSOLD", Expected: "OVERSOLD", Oversold: 900},
	}
	var b strings.Builder
	if err := suite.WriteLadder(&b, rows, nil, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	order := []string{"none", "setnx", "setnx-px", "lua", "zookeeper"}
	at := -1
	for _, lock := range order {
		i := strings.Index(out, " "+lock+" ")
		if i < at {
			t.Errorf("%s comes before the lock ahead of it in the ladder:\n%s", lock, out)
		}
		at = i
	}
	if strings.Count(out, "slow ") != 1 {
		t.Errorf("the slow scenario named %d times, want once for its group:\n%s", strings.Count(out, "slow "), out)
	}
	for _, r := range rows {
		flaw := []rune(suite.StoryFor(r.Lock, "").Flaw)
		if len(flaw) > 40 {
			flaw = flaw[:40]
		}
		if !strings.Contains(out, string(flaw)) {
			t.Errorf("%s's flaw %q is not on its line:\n%s", r.Lock, string(flaw), out)
		}
	}
	for _, l := range lines {
		if len([]rune(l)) > 160 {
			t.Errorf("a line of %d characters: %q", len([]rune(l)), l)
		}
	}
	if !strings.Contains(out, "5 of 5 pairs as the ladder expects; took 1m30s") || !strings.Contains(out, "stalled 3.1s") {
		t.Errorf("no summary or no figure:\n%s", out)
	}
}
