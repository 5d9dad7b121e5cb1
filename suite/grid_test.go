package suite_test

import (
	"bytes"
	"encoding/json"
	"html/template"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/fakeshop"
	"github.com/lockladder/lockladder/suite"
)

// matrixRows are judged rows of a small matrix: one unexpected verdict
// (slow/lua SAFE where the ladder says OVERSOLD) and a deadlock.
func matrixRows() ([]bench.Row, []suite.Skip) {
	row := func(scenario, lock, expected string, ok int, remaining, stallMs, boundMs float64) bench.Row {
		r := bench.Row{
			Scenario: scenario, Lock: lock, Endpoint: "sale", Requests: 600, OK: ok,
			Codes: map[string]int{"409": 600 - ok}, Initial: 150, Remaining: int64(remaining), Sold: int64(ok),
			StallMs: stallMs, StallBoundMs: boundMs, Expected: expected,
			RPS: 1000, P50Ms: 5, P99Ms: 20, MaxMs: 30, DurationMs: 600,
		}
		bench.Judge(&r)
		return r
	}
	rows := []bench.Row{
		row("normal", "none", "OVERSOLD", 600, 12, 4, 0),
		row("normal", "lua", "SAFE", 150, 0, 12.5, 0),
		row("slow", "lua", "OVERSOLD", 150, 0, 640, 3000),
		row("slow", "setnx-px", "OVERSOLD", 180, 0, 610, 3000),
		row("crash", "setnx", "DEADLOCK", 20, 130, 3004.2, 3000),
		row("crash", "lua", "SAFE", 150, 0, 230, 3000),
	}
	rows[4].Stopped, rows[4].Requests, rows[4].Codes = true, 140, map[string]int{"503": 119, "502": 1}
	bench.Judge(&rows[4])
	skips := []suite.Skip{
		{Scenario: "slow", Lock: "none", Reason: "unsafe with no fault at all: shown in normal"},
		{Scenario: "crash", Lock: "none", Reason: "no lock to leave behind"},
		{Scenario: "slow", Lock: "setnx", Reason: "no TTL to outlive"},
		{Scenario: "crash", Lock: "setnx-px", Reason: "not run here"},
		{Scenario: "normal", Lock: "setnx", Reason: "the app does not offer it"},
		{Scenario: "normal", Lock: "setnx-px", Reason: "the app does not offer it"},
	}
	return rows, skips
}

const wantGrid = `lock      normal      slow                  crash
--------  ----------  --------------------  ----------
none      OVERSOLD ✓  -                     -
setnx     -           -                     DEADLOCK ✓
setnx-px  -           OVERSOLD ✓            -
lua       SAFE ✓      SAFE ✗ want OVERSOLD  SAFE ✓

skipped (6 pairs, - in the grid):
  normal: setnx, setnx-px: the app does not offer it
  slow: none: unsafe with no fault at all: shown in normal
  slow: setnx: no TTL to outlive
  crash: none: no lock to leave behind
  crash: setnx-px: not run here

5 of 6 pairs as the ladder expects; took 1m23s
  ✗ slow lua/sale: SAFE, want OVERSOLD
`

func TestWriteGrid(t *testing.T) {
	rows, skips := matrixRows()
	var b bytes.Buffer
	if err := suite.WriteGrid(&b, rows, skips, 83*time.Second+200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != wantGrid {
		t.Errorf("grid:\n%s\nwant:\n%s", got, wantGrid)
	}
}

func TestWriteGridAllAsExpected(t *testing.T) {
	rows, _ := matrixRows()
	rows = append(rows[:2], rows[4:]...)
	var b bytes.Buffer
	if err := suite.WriteGrid(&b, rows, nil, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "skipped") || strings.Contains(out, "✗") || strings.Contains(out, "took") {
		t.Errorf("want no skips, no mismatch, no time:\n%s", out)
	}
	if !strings.HasSuffix(out, "\n4 of 4 pairs as the ladder expects\n") || !strings.Contains(out, "SAFE ✓") {
		t.Errorf("summary:\n%s", out)
	}
}

func TestWriteMatrixReports(t *testing.T) {
	rows, skips := matrixRows()
	dir := filepath.Join(t.TempDir(), "results")
	meta := bench.Meta{
		Started: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Requests: 600, Concurrency: 40, Stock: 150,
		Host: "2 cores, linux/amd64", Notes: []string{"redis-server 7.0.15", "nginx 1.22.1"},
	}
	jsonPath, mdPath, err := suite.WriteMatrixReports(dir, rows, skips, meta, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if jsonPath != filepath.Join(dir, "matrix-20260304-050607.json") || mdPath != filepath.Join(dir, "matrix-20260304-050607.md") {
		t.Errorf("paths %s %s", jsonPath, mdPath)
	}
	// A second report in the same second does not overwrite the first.
	j2, _, err := suite.WriteMatrixReports(dir, rows, skips, meta, time.Second)
	if err != nil || j2 != filepath.Join(dir, "matrix-20260304-050607-2.json") {
		t.Errorf("second report %s, %v", j2, err)
	}

	var report struct {
		Meta    map[string]any   `json:"meta"`
		Summary suite.Summary    `json:"summary"`
		Rows    []map[string]any `json:"rows"`
		Skipped []suite.Skip     `json:"skipped"`
	}
	if err := json.Unmarshal(fakeshop.ReadFile(t, jsonPath), &report); err != nil {
		t.Fatal(err)
	}
	if s := report.Summary; s.Pairs != 6 || s.AsExpected != 5 || s.Skipped != 6 || s.TookMs != 90000 ||
		len(s.Unexpected) != 1 || s.Unexpected[0] != "slow lua/sale: SAFE, want OVERSOLD" {
		t.Errorf("summary %+v", s)
	}
	fakeshop.CheckJSONRows(t, report.Rows, len(rows))
	for _, k := range []string{"scenario", "stall_ms", "expected"} {
		if _, ok := report.Rows[0][k]; !ok {
			t.Errorf("row lacks %q: %v", k, report.Rows[0])
		}
	}
	if report.Rows[4]["verdict"] != "DEADLOCK" || report.Rows[4]["stopped"] != true || report.Rows[4]["stall_ms"] != 3004.2 {
		t.Errorf("deadlock row %v", report.Rows[4])
	}
	if len(report.Skipped) != len(skips) || report.Skipped[0] != skips[0] {
		t.Errorf("skipped %v", report.Skipped)
	}

	md := string(fakeshop.ReadFile(t, mdPath))
	for _, want := range []string{
		"# Lock ladder matrix, 2026-03-04 05:06:07 UTC",
		"- load: 600 requests per run, 40 concurrent",
		"- redis-server 7.0.15",
		"5 of 6 pairs as the ladder expects; took 1m30s.",
		"| lock | normal | slow | crash |",
		"| `lua` | SAFE ✓ | **SAFE ✗ want OVERSOLD** | SAFE ✓ |",
		"- crash: none: no lock to leave behind",
		"Not as expected: slow lua/sale: SAFE, want OVERSOLD",
		"| scenario | lock | endpoint |",
		"| crash | `setnx` | sale |",
		bench.LegendFor(rows),
		"- `masters-down-3`: ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got := string(fakeshop.ReadFile(t, filepath.Join(dir, "matrix-latest.json"))); !strings.Contains(got, `"as_expected": 5`) {
		t.Errorf("matrix-latest.json is not the latest report")
	}
}

// GridHTML is the grid for the HTML reports: each verdict coloured as the
// reports colour it, with its mark, the unexpected one outlined, the
// skipped pairs and the summary; text escaped.
func TestGridHTML(t *testing.T) {
	rows, skips := matrixRows()
	skips = append(skips, suite.Skip{Scenario: "crash", Lock: "<b>x</b>", Reason: "a & b"})
	page := string(suite.GridHTML(rows, skips, 90*time.Second))
	for _, want := range []string{
		"<th style=\"text-align:center\">slow</th>", "<code>setnx-px</code>",
		"background:#c4320a\">OVERSOLD ✓", "background:#b54708\">DEADLOCK ✓",
		"background:#12805c;outline:3px solid #1d2430\">SAFE ✗ want OVERSOLD",
		"crash: none: no lock to leave behind", "crash: &lt;b&gt;x&lt;/b&gt;: a &amp; b",
		`<td style="text-align:center;color:#98a2b3">-</td>`,
		"5 of 6 pairs as the ladder expects; took 1m30s",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the grid lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<b>x</b>") {
		t.Error("a lock's name went out unescaped")
	}
}

// The matrix's HTML report is beside its JSON one and the latest: the
// grid, then the timelines when there are any, in the reports' style.
func TestWriteMatrixHTML(t *testing.T) {
	rows, skips := matrixRows()
	dir := t.TempDir()
	meta := bench.Meta{Started: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Requests: 600, Concurrency: 40, Stock: 150}
	jsonPath := filepath.Join(dir, "matrix-20260304-050607.json")
	path, err := suite.WriteMatrixHTML(jsonPath, rows, skips, meta, 90*time.Second, `<canvas id="tl"></canvas>`)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "matrix-20260304-050607.html") {
		t.Errorf("path %s", path)
	}
	page := string(fakeshop.ReadFile(t, path))
	for _, want := range []string{
		"<title>Lock ladder matrix, 2026-03-04 05:06:07 UTC</title>", "600 requests per run, 40 concurrent",
		"<h2>The ladder of flaws: each lock under each scenario</h2>", "SAFE ✗ want OVERSOLD",
		"<h2>" + template.HTMLEscapeString(suite.TimelinesTitle) + "</h2>", `<canvas id="tl"></canvas>`, "</body></html>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the matrix's HTML lacks %q:\n%s", want, page)
		}
	}
	if latest := string(fakeshop.ReadFile(t, filepath.Join(dir, "matrix-latest.html"))); latest != page {
		t.Error("matrix-latest.html is not the report")
	}
	// No timelines: no empty section.
	path, err = suite.WriteMatrixHTML(jsonPath, rows, skips, meta, time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if page := string(fakeshop.ReadFile(t, path)); strings.Contains(page, "Who held the lock") {
		t.Error("a timelines section with no timeline")
	}
}
