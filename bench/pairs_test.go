package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench"
)

// WritePairs: one line per lock, its endpoints side by side, each judged
// by its own count; a lock not run says so in its verdicts alone.
func TestWritePairs(t *testing.T) {
	rows := fixtureRows()
	rows = append(rows, bench.Row{Lock: "zookeeper", Endpoint: "sale", Verdict: bench.VerdictNotRun, NotRun: "zkServer not found"})
	var b bytes.Buffer
	if err := bench.WritePairs(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	locks := map[string]bool{}
	for _, r := range rows {
		locks[r.Lock] = true
	}
	if len(lines) != 2+len(locks) {
		t.Fatalf("%d lines for %d locks, want a head, a rule and one a lock:\n%s", len(lines), len(locks), b.String())
	}
	if h := strings.Fields(lines[0]); strings.Join(h, " ") != "lock sale req/s p99 ms oversold verdict testLock req/s p99 ms lost verdict" {
		t.Errorf("head %q", lines[0])
	}
	none := strings.Fields(lines[2])
	if len(none) < 9 || none[0] != "none" || none[3] != "3870" || none[4] != bench.VerdictOversold || none[7] != "3678" || !strings.HasSuffix(lines[2], bench.VerdictLostUpdates) {
		t.Errorf("none's line %q: want its sale oversold 3870, OVERSOLD, its testLock lost 3678, LOST UPDATES", lines[2])
	}
	zk := lines[len(lines)-1]
	if !strings.HasPrefix(zk, "zookeeper") || !strings.Contains(zk, bench.VerdictNotRun) || strings.Contains(zk, "zkServer") {
		t.Errorf("a lock not run: %q, want its verdict alone (the reason is said once, under the table)", zk)
	}
}
