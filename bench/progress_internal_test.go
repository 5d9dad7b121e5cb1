package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestProgressLive(t *testing.T) {
	var b bytes.Buffer
	p := &Progress{w: &b, live: true}
	p.start("lua", "sale", 5000)
	p.update(2500, 900, time.Second)
	p.update(5000, 1000, 2*time.Second)
	r := Row{Lock: "lua", Endpoint: "sale", Requests: 5000, OK: 1000, Codes: map[string]int{"409": 4000},
		Initial: 1000, Sold: 1000, RPS: 2500, P99Ms: 12.3}
	Judge(&r)
	p.finish(r)

	out := b.String()
	if n := strings.Count(out, "\r"); n != 4 {
		t.Errorf("want 4 redraws (start, 2 updates, finish), got %d: %q", n, out)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("want the run to end with exactly one newline: %q", out)
	}
	for _, s := range []string{"[############............] 2500/5000  ok 900  2500 req/s", "409:4000", "SAFE"} {
		if !strings.Contains(out, s) {
			t.Errorf("live progress lacks %q: %q", s, out)
		}
	}
	// Each redraw covers the whole of the line it overwrites.
	segs := strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:]
	for i := 1; i < len(segs); i++ {
		if len(segs[i]) < len(strings.TrimRight(segs[i-1], " ")) {
			t.Errorf("redraw %q leaves part of %q on screen", segs[i], segs[i-1])
		}
	}

	b.Reset()
	p.start("lua", "testLock", 10)
	p.fail(errString("boom"))
	out = strings.TrimRight(strings.TrimSuffix(b.String(), "\n"), " ")
	if !strings.HasSuffix(out, "\rlua/testLock  failed: boom") || !strings.HasPrefix(out, "\rlua/testLock") {
		t.Errorf("failure line: %q", out)
	}
}

func TestProgressPlainAndNil(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	if p.isLive() {
		t.Fatal("a buffer is not a terminal")
	}
	p.start("none", "sale", 10)
	p.update(5, 5, time.Second)
	if b.Len() != 0 {
		t.Errorf("plain progress wrote before the run ended: %q", b.String())
	}
	p.finish(Row{Lock: "none", Endpoint: "sale", Requests: 10, OK: 10, Verdict: VerdictOversold})
	if out := b.String(); strings.Contains(out, "\r") || strings.Count(out, "\n") != 1 || !strings.Contains(out, "OVERSOLD") {
		t.Errorf("plain progress: %q", out)
	}

	var nilp *Progress = NewProgress(nil)
	nilp.start("x", "sale", 1)
	nilp.update(1, 1, time.Second)
	nilp.finish(Row{})
	nilp.fail(errString("x"))
}

type errString string

func (e errString) Error() string { return string(e) }

// TestProgressLiveRun drives the live line from a real run: the ticker
// redraws it while requests are in flight.
func TestProgressLiveRun(t *testing.T) {
	var mu sync.Mutex
	var stock, num int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "only")
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/reset":
			stock, num = 50, 0
		case "/testLock":
			time.Sleep(5 * time.Millisecond)
			num++
		}
		fmt.Fprintf(w, `{"stock":%d,"sold":0,"num":%d}`, stock, num)
	}))
	defer srv.Close()

	cfg, err := Config{URL: srv.URL, Requests: 80, Concurrency: 4, Stock: 50}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(cfg)
	defer h.close()
	var b bytes.Buffer
	r, err := h.runOne(t.Context(), "lua", "testLock", &Progress{w: &b, live: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictSafe || r.OK != 80 || r.Num != 80 || r.Instances["only"] != 80 {
		t.Errorf("row %+v", r)
	}
	out := b.String()
	if strings.Count(out, "\r") < 3 || !strings.Contains(out, "/80  ok ") || !strings.HasSuffix(strings.TrimRight(out, " \n"), "SAFE") {
		t.Errorf("want a start line, at least one tick and the summary: %q", out)
	}
}

// TestProgressSeries: in a planned series every line says which run it
// is and about how long the series has left, from the runs done so far.
func TestProgressSeries(t *testing.T) {
	var b bytes.Buffer
	p := &Progress{w: &b, live: true}
	p.plan([]string{"lua/sale", "lua/testLock", "fair/sale"}, nil)
	p.began = time.Now().Add(-10 * time.Second) // as if the series had run 10s
	p.lastDone = p.began
	p.start("lua", "sale", 100)
	p.update(50, 10, time.Second) // half of the first run in 1s: 1s left of it, 2s per run
	if out := b.String(); !strings.Contains(out, "[1/3] lua/sale") || !strings.Contains(out, "10s in, ~5s left") {
		t.Errorf("first run's live line: %q", out)
	}
	p.lastDone = p.began.Add(4 * time.Second) // the first run took 4s
	p.finish(Row{Lock: "lua", Endpoint: "sale", Requests: 100, OK: 100, Verdict: VerdictSafe})
	if out := b.String(); !strings.Contains(out, "(10s in, ~") {
		t.Errorf("finished line: %q", out)
	}
	if out := b.String(); strings.Contains(out, "~0s left") {
		t.Errorf("two runs to go, none left: %q", out)
	}
	b.Reset()
	p.lastDone = p.began.Add(4 * time.Second)
	p.start("lua", "testLock", 100)
	p.update(0, 0, 0) // nothing known of this run: a run's average per run
	if out := b.String(); !strings.Contains(out, "[2/3] lua/testLock") || !strings.Contains(out, "~4s left") {
		t.Errorf("second run's live line: %q", out)
	}
}

// TestProgressExpectsEarlierRuns: with an earlier run's times, the time
// left counts each run to come at what it took then, scaled by how the
// runs done now compare: a slow lock late in the series is foreseen.
func TestProgressExpectsEarlierRuns(t *testing.T) {
	var b bytes.Buffer
	p := &Progress{w: &b, live: true}
	p.plan([]string{"none/sale", "lua/sale", "etcd/sale"}, map[string]time.Duration{
		"none/sale": time.Second, "lua/sale": 2 * time.Second, "etcd/sale": 10 * time.Second,
	})
	p.began = time.Now()
	p.start("none", "sale", 100)
	p.update(0, 0, 0) // nothing answered yet: the earlier times, unscaled
	if out := b.String(); !strings.Contains(out, "~13s left") {
		t.Errorf("before any answer: %q, want 1+2+10s left", out)
	}
	// This run loaded for 2s, twice as long as then, and spent 1s more
	// around its load (reset, read-back, checks).
	p.runBegan = time.Now().Add(-3 * time.Second)
	p.finish(Row{Lock: "none", Endpoint: "sale", Requests: 100, OK: 100, DurationMs: 2000, Verdict: VerdictOversold})
	if out := b.String(); !strings.Contains(out, "~26s left") {
		t.Errorf("after a run twice as slow: %q, want (2+10)*2 + 2*1 = 26s left", out)
	}
}

// TestPreviousRowsOfTheSameSize: Compare's progress goes by the folder's
// latest report only when it ran the same requests, concurrency and items.
func TestPreviousRowsOfTheSameSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "latest.json")
	rows := []Row{{Lock: "lua", Endpoint: "sale", DurationMs: 1500}, {Scenario: "slow", Lock: "lua", Endpoint: "sale", DurationMs: 9000}}
	write := func(m Meta) {
		t.Helper()
		b, err := json.Marshal(map[string]any{"meta": m, "rows": rows})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{URL: "http://127.0.0.1:8080"}
	write(Meta{Requests: DefaultRequests, Concurrency: DefaultConcurrency})
	got := tookBefore(previousRows(path, cfg))
	if len(got) != 1 || got["lua/sale"] != 1500*time.Millisecond {
		t.Errorf("same size: %v, want lua/sale 1.5s (a scenario's run is not a plain one)", got)
	}
	write(Meta{Requests: 200, Concurrency: DefaultConcurrency})
	if got := previousRows(path, cfg); got != nil {
		t.Errorf("another size: %v, want none", got)
	}
	if got := previousRows(filepath.Join(t.TempDir(), "none.json"), cfg); got != nil {
		t.Errorf("no report: %v", got)
	}
}

// TestProgressOneLine: a one-line series leaves no line per run on a
// terminal (the live line says how far it is, and is blanked at the end),
// and elsewhere a plain line every twentieth run and the last.
func TestProgressOneLine(t *testing.T) {
	keys := make([]string, 22)
	for i := range keys {
		keys[i] = fmt.Sprintf("l%d/sale", i)
	}
	run := func(live bool) string {
		var b bytes.Buffer
		p := &Progress{w: &b, live: live, oneLine: true}
		p.plan(keys, nil)
		for i := range keys {
			p.start(fmt.Sprintf("l%d", i), "sale", 10)
			p.finish(Row{Lock: fmt.Sprintf("l%d", i), Endpoint: "sale", Requests: 10, OK: 10, Verdict: VerdictSafe})
		}
		p.clear()
		return b.String()
	}
	live := run(true)
	if strings.Contains(live, "\n") {
		t.Errorf("terminal: a line left behind: %q", live)
	}
	if !strings.Contains(live, "[22/22] 22 of 22 runs done") || !strings.HasSuffix(live, "\r") {
		t.Errorf("terminal: want the last count, then the line blanked: %q", live)
	}
	plain := run(false)
	lines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "[20/22] 20 of 22 runs done") || !strings.HasPrefix(lines[1], "[22/22] 22 of 22 runs done") {
		t.Errorf("plain: want the 20th and the last run's lines, got %q", lines)
	}
}
