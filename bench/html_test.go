package bench_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// TestWriteHTML: the HTML report has the table and one bar per lock that
// ran on each chart, coloured by verdict; nothing from a row is left
// unescaped; it needs no script and no network.
func TestWriteHTML(t *testing.T) {
	rows := fixtureRows()
	rows = append(rows, bench.Row{Lock: "zookeeper", Endpoint: "sale", Verdict: bench.VerdictNotRun, NotRun: "needs ZooKeeper"},
		bench.Row{Lock: "<b>x</b>", Endpoint: "sale", Verdict: bench.VerdictSafe, RPS: 10})
	var b bytes.Buffer
	if err := bench.WriteHTML(&b, rows, bench.Meta{Started: time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC), Requests: 5000, Concurrency: 100, Stock: 1000}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<svg", "/sale: throughput", "/testLock: p99 latency", "2026-11-23 19:00:00",
		`fill="#c4320a"`, `fill="#12805c"`, "OVERSOLD", "LOST UPDATES", "&lt;b&gt;x&lt;/b&gt;", "5000 requests per run"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "<b>x</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	// /sale's charts: none, lua, atomic and the escaped one; not zookeeper.
	sale := page[strings.Index(page, "/sale: throughput"):strings.Index(page, "/sale: p99 latency")]
	if n := strings.Count(sale, "<rect"); n != 4 {
		t.Errorf("/sale's throughput chart has %d bars, want 4 (the lock that did not run has none)", n)
	}
	if strings.Contains(sale, "zookeeper") {
		t.Error("a lock that did not run has a bar")
	}
}

// Compare writes the HTML report beside the JSON and Markdown ones, and
// as latest.html.
func TestHTMLBesideTheOtherReports(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bench-x.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := bench.WriteHTMLBeside(path, fixtureRows(), bench.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "bench-x.html"); got != want {
		t.Errorf("HTML report at %s, want %s", got, want)
	}
	a, _ := os.ReadFile(got)
	l, _ := os.ReadFile(filepath.Join(dir, "latest.html"))
	if len(a) == 0 || !bytes.Equal(a, l) {
		t.Error("latest.html is not the report")
	}
}

// Sections go before the table, their bodies as given; AddHTML writes the
// report again, with them, where Compare wrote it.
func TestHTMLSections(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bench-y.json")
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := bench.Reports{JSON: path, HTML: filepath.Join(dir, "bench-y.html")}
	if err := rep.AddHTML(fixtureRows(), bench.HTMLSection{Title: "The <ladder>", Body: `<table id="grid"></table>`}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{rep.HTML, filepath.Join(dir, "latest.html")} {
		page, _ := os.ReadFile(p)
		table, section := bytes.Index(page, []byte("<h2>The table</h2>")), bytes.Index(page, []byte("<h2>The &lt;ladder&gt;</h2>\n<table id=\"grid\"></table>"))
		if table < 0 || section < 0 || section > table {
			t.Errorf("%s: the section is not before the table:\n%s", p, page)
		}
	}
	if err := (bench.Reports{}).AddHTML(nil); err == nil {
		t.Error("AddHTML with no report: no error")
	}
}
