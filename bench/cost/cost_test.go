package cost_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench/cost"
)

func ref(ep string, rps, p99 float64) cost.Figures {
	return cost.Figures{Lock: cost.Reference, Endpoint: ep, RPS: rps, P99Ms: p99, Reference: true}
}

func rung(lock, ep string, rps, p99 float64) cost.Figures {
	return cost.Figures{Lock: lock, Endpoint: ep, RPS: rps, P99Ms: p99}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// Each rung is compared with the reference runs around it on its own
// endpoint: the geometric mean of the last before and the first after; a
// rung run twice keeps its better throughput and its better p99.
func TestRatiosAgainstTheReferenceAroundEachRung(t *testing.T) {
	figs := []cost.Figures{
		ref("sale", 1000, 10), ref("testLock", 800, 20),
		rung("lua", "sale", 100, 50), rung("lua", "testLock", 80, 100),
		ref("sale", 4000, 40), ref("testLock", 800, 20),
		rung("fair", "sale", 200, 80),
		ref("sale", 4000, 40),
		rung("fair", "sale", 100, 20), // again: the better of each figure is kept
	}
	got, err := cost.Ratios(figs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]cost.Ratio{
		"lua/sale":     {RPS: 100.0 / 2000, P99: 50.0 / 20}, // sqrt(1000*4000), sqrt(10*40)
		"lua/testLock": {RPS: 80.0 / 800, P99: 100.0 / 20},
		"fair/sale":    {RPS: 200.0 / 4000, P99: 20.0 / 40}, // its first run's throughput, its second's p99
	}
	if len(got) != len(want) {
		t.Fatalf("ratios %v, want %v", got, want)
	}
	for k, w := range want {
		if g := got[k]; !near(g.RPS, w.RPS) || !near(g.P99, w.P99) {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
}

func TestRatiosNeedTheReference(t *testing.T) {
	_, err := cost.Ratios([]cost.Figures{ref("sale", 1000, 10), rung("lua", "testLock", 100, 50)})
	if err == nil || !strings.Contains(err.Error(), "no atomic run on testLock") {
		t.Fatalf("error %v, want the missing reference named", err)
	}
	_, err = cost.Ratios([]cost.Figures{ref("sale", 1000, 10), rung("lua", "sale", 0, 0)})
	if err == nil || !strings.Contains(err.Error(), "lua/sale: no figures") {
		t.Fatalf("error %v, want the rung without figures named", err)
	}
}

func TestMedianOfRuns(t *testing.T) {
	m := cost.Median([]map[string]cost.Ratio{
		{"lua/sale": {RPS: 0.1, P99: 4}},
		{"lua/sale": {RPS: 0.3, P99: 2}, "fair/sale": {RPS: 0.2, P99: 3}},
		{"lua/sale": {RPS: 0.2, P99: 9}},
	})
	if g := m["lua/sale"]; g.RPS != 0.2 || g.P99 != 4 {
		t.Errorf("lua/sale %+v, want the middle of three: 0.2, 4", g)
	}
	if g := m["fair/sale"]; g.RPS != 0.2 || g.P99 != 3 {
		t.Errorf("fair/sale %+v, want its one run's", g)
	}
}

// The check fails a rung whose throughput ratio fell, or whose p99 ratio
// rose, past the bound, naming the rung, the figure, the baseline and
// the bound; a move inside the bound, or for the better, passes; a rung
// the baseline and the run do not share is named too.
func TestCheckNamesTheRungTheFigureTheBaselineAndTheBound(t *testing.T) {
	b := cost.Baseline{Ratios: map[string]cost.Ratio{
		"pg-advisory/sale": {RPS: 0.12, P99: 4},
		"lua/sale":         {RPS: 0.3, P99: 3},
		"fair/sale":        {RPS: 0.3, P99: 3},
		"gone/sale":        {RPS: 0.3, P99: 3},
	}}
	got := map[string]cost.Ratio{
		"pg-advisory/sale": {RPS: 0.0045, P99: 110}, // e76382f's parent
		"lua/sale":         {RPS: 0.1, P99: 12},     // 3x slower, 4x longer: inside 4x and 6x
		"fair/sale":        {RPS: 3, P99: 0.1},      // better
		"new/sale":         {RPS: 0.3, P99: 3},
	}
	fails := cost.Check(b, got, cost.Bound{RPS: 4, P99: 6})
	var lines []string
	for _, f := range fails {
		lines = append(lines, f.String())
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"pg-advisory/sale: throughput 0.0045 of atomic's, baseline 0.12: 26.7x slower, bound 4x",
		"pg-advisory/sale: p99 110 times atomic's, baseline 4: 27.5x longer, bound 6x",
		"gone/sale: in the baseline, not measured",
		"new/sale: measured, but not in the baseline (make bench-baseline)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("failures:\n%s\nwant a line %q", text, want)
		}
	}
	if len(fails) != 4 {
		t.Errorf("%d failures, want 4:\n%s", len(fails), text)
	}
	if err := cost.Error(fails); err == nil || !strings.Contains(err.Error(), "4 past the bound") {
		t.Errorf("Error: %v", err)
	}
	if cost.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	if _, err := cost.ReadBaseline(path); err == nil || !strings.Contains(err.Error(), "make bench-baseline") {
		t.Fatalf("a missing baseline: %v, want make bench-baseline named", err)
	}
	b := cost.Baseline{Size: cost.Size{Requests: 1000, Concurrency: 100, Stock: 200}, Runs: 3,
		Ratios: map[string]cost.Ratio{"lua/sale": {RPS: 0.1, P99: 4}}}
	if err := cost.WriteBaseline(path, b); err != nil {
		t.Fatal(err)
	}
	r, err := cost.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reference != cost.Reference || r.About == "" || r.Size != b.Size || r.Runs != 3 || r.Ratios["lua/sale"] != b.Ratios["lua/sale"] {
		t.Errorf("read back %+v, want %+v with the reference and about", r, b)
	}
}

// The committed baseline is whole: every rung of the ladder on both
// endpoints, each ratio a positive figure, at the check's size.
func TestCommittedBaseline(t *testing.T) {
	b, err := cost.ReadBaseline("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range b.Ratios {
		if !(r.RPS > 0) || !(r.P99 > 0) || strings.Count(k, "/") != 1 {
			t.Errorf("%s: %+v", k, r)
		}
	}
	if b.Requests <= 0 || b.Concurrency <= 0 || b.Stock <= 0 || b.Runs <= 0 {
		t.Errorf("size %+v, runs %d", b.Size, b.Runs)
	}
}

// readFigures reads the figures of a bench check's report
// (results/bench-check-*.json) kept in testdata.
func readFigures(t *testing.T, name string) []cost.Figures {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Figures []cost.Figures `json:"figures"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(rep.Figures) == 0 {
		t.Fatalf("%s holds no figures", name)
	}
	return rep.Figures
}

// The committed baseline and DefaultBound, against figures the check
// measured (testdata, MEASUREMENTS.md): a check of an app built with
// e76382f's fix undone (the PostgreSQL rungs' heads sleeping 100ms
// between tries; .ci/bench-regress) fails on every PostgreSQL rung on
// both endpoints, and a check of the unchanged tree on the same machine
// passes. A baseline rewritten, or a bound widened, so far that the
// regression the check was built for would pass fails here.
func TestCommittedBaselineCatchesThePostgreSQLRegression(t *testing.T) {
	b, err := cost.ReadBaseline("baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		want []string // keys that must fail; nil: none may
	}{
		{"unchanged.json", nil},
		{"regressed-e76382f.json", []string{"pg-advisory/sale", "pg-advisory/testLock",
			"pg-advisory-xact/sale", "pg-advisory-xact/testLock", "pg-advisory-fenced/sale", "pg-advisory-fenced/testLock"}},
	} {
		got, err := cost.Ratios(readFigures(t, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		failed := map[string]bool{}
		var lines []string
		for _, f := range cost.Check(b, got, cost.DefaultBound) {
			failed[f.Key] = true
			lines = append(lines, f.String())
		}
		if tc.want == nil && len(lines) > 0 {
			t.Errorf("%s, of the unchanged tree, fails:\n%s", tc.file, strings.Join(lines, "\n"))
		}
		for _, k := range tc.want {
			if !failed[k] {
				t.Errorf("%s: %s passes the check (%+v against the baseline's %+v, bound %+v); failures:\n%s",
					tc.file, k, got[k], b.Ratios[k], cost.DefaultBound, strings.Join(lines, "\n"))
			}
		}
	}
}
