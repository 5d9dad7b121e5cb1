package bench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/fakeshop"
	"github.com/lockladder/lockladder/internal/report"
)

const wantTable = `lock    endpoint  requests    ok  other                   sold  remaining   num  oversold  lost  req/s  p50 ms  p99 ms  max ms   wait max ms  history  overlaps  verdict
------  --------  --------  ----  ----------------------  ----  ---------  ----  --------  ----  -----  ------  ------  ------  ------------  -------  --------  ------------
none    sale          5000  4870  409:130                 4870          0     -      3870     -   2710    31.2    96.5   140.9             -  illegal      4812  OVERSOLD
none    testLock      5000  5000  -                          -          -  1322         -  3678   2911    30.1    88.0   120.4             -  illegal     4950+  LOST UPDATES
lua     sale          5000  1000  409:3998 503:2          1000          0     -         0     -    412   180.2  1210.5  4999.9  812/1205/998  ok              0  SAFE
atomic  sale          5000  1000  409:4000 502:1 error:3  1000          0     -         0     -   9121    0.84    4.12    9.99             -  ok              -  SAFE
`

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := bench.WriteTable(&b, fixtureRows()); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", got, wantTable)
	}

	b.Reset()
	if err := bench.WriteTable(&b, nil); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "lock") {
		t.Errorf("empty table: want the header and its rule, got %q", b.String())
	}
}

// Matrix rows in the plain table gain the scenario, the stall and the
// expected verdict; plain rows keep the table of bench (TestWriteTable).
func TestWriteTableScenarioColumns(t *testing.T) {
	rows := matrixRows()
	var b bytes.Buffer
	if err := bench.WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	head := strings.Fields(lines[0])
	if head[0] != "scenario" || head[len(head)-1] != "verdict" || head[len(head)-2] != "expected" {
		t.Errorf("head %q", lines[0])
	}
	for _, want := range []string{"crash     setnx", "3004.2 stopped  DEADLOCK  DEADLOCK", "640.0  OVERSOLD  SAFE"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := bench.WriteMarkdown(&b, fixtureRows()); err != nil {
		t.Fatal(err)
	}
	checkMarkdownTable(t, b.String(), 4)
}

// checkMarkdownTable checks a Markdown table of n rows and its legend.
func checkMarkdownTable(t *testing.T, md string, n int) {
	t.Helper()
	var table []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		}
	}
	if len(table) != n+2 {
		t.Fatalf("want a head, a rule and %d rows, got %d table lines:\n%s", n, len(table), md)
	}
	for _, l := range table {
		if strings.Count(l, "|") != 19 {
			t.Errorf("want 18 cells, got %q", l)
		}
	}
	for _, want := range []string{
		"| lock | endpoint | requests | ok | other | sold | remaining | num | oversold | lost | req/s | p50 ms | p99 ms | max ms | wait max ms | history | overlaps | verdict |",
		"| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |",
		"| `none` | sale | 5000 | 4870 | 409:130 | 4870 | 0 | - | 3870 | - | 2710 | 31.2 | 96.5 | 140.9 | - | illegal | 4812 | **OVERSOLD** |",
		"| `none` | testLock | 5000 | 5000 | - | - | - | 1322 | - | 3678 | 2911 | 30.1 | 88.0 | 120.4 | - | illegal | 4950+ | **LOST UPDATES** |",
		"| `lua` | sale | 5000 | 1000 | 409:3998 503:2 | 1000 | 0 | - | 0 | - | 412 | 180.2 | 1210.5 | 4999.9 | 812/1205/998 | ok | 0 | SAFE |",
		"| `atomic` | sale | 5000 | 1000 | 409:4000 502:1 error:3 | 1000 | 0 | - | 0 | - | 9121 | 0.84 | 4.12 | 9.99 | - | ok | - | SAFE |",
		"\n" + bench.LegendFor(fixtureRows()) + "\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The rows as the reports encode them (ReportRows through report.JSON,
// WriteJSON before).
func TestReportRowsJSON(t *testing.T) {
	rows := fixtureRows()
	rows[0].Codes, rows[0].Instances = nil, nil // never null in the output
	var b bytes.Buffer
	if err := report.JSON(&b, bench.ReportRows(rows)); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, b.String())
	}
	fakeshop.CheckJSONRows(t, got, len(rows))
	if _, ok := got[0]["codes"].(map[string]any); !ok {
		t.Errorf("nil codes encoded as %v, want {}", got[0]["codes"])
	}
	if got[0]["oversold"] != 3870.0 || got[1]["lost_updates"] != 3678.0 || got[3]["p50_ms"] != 0.84 {
		t.Errorf("values: %v", got)
	}

	var back []bench.Row
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back[3].Codes["error"] != 3 || back[2].Instances["app-2"] != 333 || back[1].Verdict != bench.VerdictLostUpdates {
		t.Errorf("round trip lost data: %+v", back)
	}
}

func TestWriteReports(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	started := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	meta := bench.Meta{
		Started: started, URL: "http://127.0.0.1:8080", Requests: 5000, Concurrency: 100, Stock: 1000,
		Host: "2 cores, linux/amd64", Notes: []string{"3 instances behind nginx"},
	}

	jsonPath, mdPath, err := bench.WriteReports(dir, fixtureRows(), meta)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "bench-20260304-050607.json"); jsonPath != want {
		t.Errorf("json path %s, want %s", jsonPath, want)
	}
	if want := filepath.Join(dir, "bench-20260304-050607.md"); mdPath != want {
		t.Errorf("md path %s, want %s", mdPath, want)
	}

	js := fakeshop.ReadFile(t, jsonPath)
	var report struct {
		Meta map[string]any   `json:"meta"`
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(js, &report); err != nil {
		t.Fatalf("bad JSON report: %v", err)
	}
	fakeshop.CheckJSONRows(t, report.Rows, 4)
	if report.Meta["started"] != "2026-03-04T05:06:07Z" || report.Meta["concurrency"] != 100.0 ||
		report.Meta["host"] != "2 cores, linux/amd64" || report.Meta["url"] != "http://127.0.0.1:8080" {
		t.Errorf("meta: %v", report.Meta)
	}

	md := string(fakeshop.ReadFile(t, mdPath))
	for _, want := range []string{
		"# Lock ladder benchmark, 2026-03-04 05:06:07 UTC\n",
		"- target: http://127.0.0.1:8080\n",
		"- load: 5000 requests per run, 100 concurrent (closed loop), stock reset to 1000 before each run\n",
		"- host: 2 cores, linux/amd64\n",
		"- 3 instances behind nginx\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
	checkMarkdownTable(t, md, 4)

	if !bytes.Equal(fakeshop.ReadFile(t, filepath.Join(dir, "latest.json")), js) {
		t.Error("latest.json differs from the report")
	}
	if string(fakeshop.ReadFile(t, filepath.Join(dir, "latest.md"))) != md {
		t.Error("latest.md differs from the report")
	}

	// A second report in the same second keeps the first.
	rows := fixtureRows()[:1]
	jsonPath2, mdPath2, err := bench.WriteReports(dir, rows, meta)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "bench-20260304-050607-2.json"); jsonPath2 != want {
		t.Errorf("second json path %s, want %s", jsonPath2, want)
	}
	if !strings.HasSuffix(mdPath2, "bench-20260304-050607-2.md") {
		t.Errorf("second md path %s", mdPath2)
	}
	if !bytes.Equal(fakeshop.ReadFile(t, jsonPath), js) {
		t.Error("the first report was overwritten")
	}
	if !bytes.Equal(fakeshop.ReadFile(t, filepath.Join(dir, "latest.json")), fakeshop.ReadFile(t, jsonPath2)) {
		t.Error("latest.json is not the newest report")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 6 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("want 6 files (2 reports, 2 latest), got %v", names)
	}
}

func TestHostInfoAndNewMeta(t *testing.T) {
	h := bench.HostInfo()
	if !strings.Contains(h, " core") || !strings.Contains(h, "/") {
		t.Errorf("HostInfo() = %q, want like \"2 cores, linux/amd64\"", h)
	}
	now := time.Now()
	m := bench.NewMeta(bench.Config{URL: "http://127.0.0.1:8080/"}, now)
	if m.Requests != bench.DefaultRequests || m.Concurrency != bench.DefaultConcurrency || m.Stock != bench.DefaultStock ||
		m.URL != "http://127.0.0.1:8080" || !m.Started.Equal(now) || m.Host != h {
		t.Errorf("NewMeta: %+v", m)
	}
}
