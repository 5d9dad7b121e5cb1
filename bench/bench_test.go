package bench_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// small is a quick load: enough overlap to expose the racy fake.
func small(url string) bench.Config {
	return bench.Config{URL: url, Requests: 300, Concurrency: 30, Stock: 100, Timeout: 10 * time.Second}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestRunOne(t *testing.T) {
	tests := []struct {
		lock, endpoint string
		verdict        string
		check          func(t *testing.T, r bench.Row)
	}{
		{"atomic", "sale", bench.VerdictSafe, func(t *testing.T, r bench.Row) {
			if r.OK != 100 || r.Codes["409"] != 200 || r.Remaining != 0 || r.Sold != 100 || r.Oversold != 0 {
				t.Errorf("want 100 sold, 200 409s, 0 left; got %+v", r)
			}
		}},
		{"none", "sale", bench.VerdictOversold, func(t *testing.T, r bench.Row) {
			if r.Oversold <= 0 || int64(r.OK) <= r.Initial-r.Remaining {
				t.Errorf("want oversold > 0, got %+v", r)
			}
		}},
		{"atomic", "testLock", bench.VerdictSafe, func(t *testing.T, r bench.Row) {
			if r.OK != 300 || r.Num != 300 || r.LostUpdates != 0 || len(r.Codes) != 0 {
				t.Errorf("want 300 increments all kept, got %+v", r)
			}
		}},
		{"none", "testLock", bench.VerdictLostUpdates, func(t *testing.T, r bench.Row) {
			if r.LostUpdates <= 0 || r.LostUpdates != int64(r.OK)-r.Num {
				t.Errorf("want lost updates > 0, got %+v", r)
			}
		}},
		{"flaky", "testLock", bench.VerdictSafe, func(t *testing.T, r bench.Row) {
			if r.Codes["503"] != 75 || r.OK != 225 || r.Num != 225 {
				t.Errorf("want 75 503s and 225 increments, got %+v", r)
			}
			// Each answer from inside the lock said how long it waited
			// (n%40 ms and a half): the longest is 39.5, and each
			// instance's is one of those.
			if len(r.MaxWaitMs) != len(r.Instances) || len(r.MaxWaitMs) == 0 {
				t.Errorf("longest waits %v for instances %v: want one per instance", r.MaxWaitMs, r.Instances)
			}
			longest := 0.0
			for inst, w := range r.MaxWaitMs {
				if w < 0.5 || w > 39.5 || w != float64(int(w))+0.5 {
					t.Errorf("%s: longest wait %v, not one the app said", inst, w)
				}
				longest = max(longest, w)
			}
			if longest != 39.5 {
				t.Errorf("longest wait %v of all, want 39.5", longest)
			}
		}},
		{"drop", "sale", bench.VerdictSafe, func(t *testing.T, r bench.Row) {
			// POST is never replayed by the transport: each cut
			// connection is one transport error, not a second sale.
			if r.Codes["error"] != 60 || r.OK != 100 || r.Codes["409"] != 140 {
				t.Errorf("want 60 errors, 100 sold, 140 409s; got %+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.lock+"/"+tt.endpoint, func(t *testing.T) {
			f := &fakeApp{strategies: []string{tt.lock}}
			srv := f.start(t)
			cfg := small(srv.URL)

			r, err := bench.RunOne(t.Context(), cfg, tt.lock, tt.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.hits.Load(); got != int64(cfg.Requests) {
				t.Errorf("the app saw %d load requests, want exactly %d", got, cfg.Requests)
			}
			if m := f.maxInflight.Load(); m > int64(cfg.Concurrency) {
				t.Errorf("%d requests in flight at once, want at most %d (closed loop)", m, cfg.Concurrency)
			}
			if m := f.loadMethods(); m[http.MethodPost] != cfg.Requests {
				t.Errorf("load methods %v, want %d POST", m, cfg.Requests)
			}
			if r.Lock != tt.lock || r.Endpoint != tt.endpoint {
				t.Errorf("row is %s/%s", r.Lock, r.Endpoint)
			}
			if r.Requests != cfg.Requests || r.OK+sum(r.Codes) != cfg.Requests {
				t.Errorf("requests %d, ok %d + other %v, want %d in all", r.Requests, r.OK, r.Codes, cfg.Requests)
			}
			if sum(r.Instances) != r.OK || (r.OK >= 30 && len(r.Instances) != len(fakeInstances)) {
				t.Errorf("instances %v do not add up to ok %d over %d instances", r.Instances, r.OK, len(fakeInstances))
			}
			if r.Initial != int64(cfg.Stock) {
				t.Errorf("initial %d, want %d", r.Initial, cfg.Stock)
			}
			if r.RPS <= 0 || r.DurationMs <= 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.MaxMs < r.P99Ms {
				t.Errorf("implausible timings: rps %v duration %v p50 %v p99 %v max %v", r.RPS, r.DurationMs, r.P50Ms, r.P99Ms, r.MaxMs)
			}
			if r.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (row %+v)", r.Verdict, tt.verdict, r)
			}
			tt.check(t, r)
		})
	}
}

func TestRunAllStrategies(t *testing.T) {
	f := &fakeApp{strategies: []string{"none", "atomic"}}
	srv := f.start(t)
	cfg := small(srv.URL)
	var progress bytes.Buffer
	cfg.Progress = &progress

	rows, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ lock, endpoint, verdict string }{
		{"none", "sale", bench.VerdictOversold},
		{"none", "testLock", bench.VerdictLostUpdates},
		{"atomic", "sale", bench.VerdictSafe},
		{"atomic", "testLock", bench.VerdictSafe},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if r := rows[i]; r.Lock != w.lock || r.Endpoint != w.endpoint || r.Verdict != w.verdict {
			t.Errorf("row %d: %s/%s %s, want %s/%s %s", i, r.Lock, r.Endpoint, r.Verdict, w.lock, w.endpoint, w.verdict)
		}
	}
	if n := f.resets.Load(); n != 4 {
		t.Errorf("%d resets, want one per run (4)", n)
	}
	for _, r := range rows {
		if r.MaxWaitMs != nil {
			t.Errorf("%s/%s: longest waits %v from a lock that says it waited for nothing", r.Lock, r.Endpoint, r.MaxWaitMs)
		}
	}

	// Not a terminal: one plain line per run, no carriage returns.
	out := progress.String()
	if strings.Contains(out, "\r") {
		t.Errorf("progress to a buffer has \\r: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("progress has %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	col := strings.Index(lines[0], "300 req")
	for i, w := range want {
		if c := strings.Index(lines[i], "300 req"); c != col {
			t.Errorf("progress line %d is not aligned with the first: %q", i, lines[i])
		}
		for _, s := range []string{w.lock + "/" + w.endpoint, "300 req", w.verdict} {
			if !strings.Contains(lines[i], s) {
				t.Errorf("progress line %d %q lacks %q", i, lines[i], s)
			}
		}
	}
}

// A lock the app cannot serve here (its server is missing) is not run: its
// rows say NOT RUN and why, and naming it is an error, not a table of 503s.
func TestRunSkipsUnavailableLocks(t *testing.T) {
	const why = "zookeeper: not running (install zookeeper)"
	f := &fakeApp{strategies: []string{"atomic", "zookeeper"}, unavailable: map[string]string{"zookeeper": why}}
	srv := f.start(t)
	cfg := small(srv.URL)
	var progress bytes.Buffer
	cfg.Progress = &progress

	rows, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("got %d rows, want 4: %+v", len(rows), rows)
	}
	for _, r := range rows[2:] {
		if r.Lock != "zookeeper" || r.Verdict != bench.VerdictNotRun || r.NotRun != why || r.Requests != 0 {
			t.Errorf("row %s/%s: verdict %q, not run %q, %d requests: want NOT RUN with the reason and no request", r.Lock, r.Endpoint, r.Verdict, r.NotRun, r.Requests)
		}
	}
	if n := f.resets.Load(); n != 2 {
		t.Errorf("%d resets, want 2: the unavailable lock's runs must not touch the app", n)
	}
	if !strings.Contains(progress.String(), "not run: zookeeper: "+why) {
		t.Errorf("progress does not say why zookeeper was not run:\n%s", progress.String())
	}
	var table bytes.Buffer
	bench.WriteTable(&table, rows)
	if !strings.Contains(table.String(), bench.VerdictNotRun) {
		t.Errorf("the table does not show NOT RUN:\n%s", table.String())
	}

	cfg.Locks = []string{"zookeeper"}
	if _, err := bench.Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("Run of an unavailable lock by name: error %v, want one saying %q", err, why)
	}
}

func TestRunChosenLocksAndEndpoints(t *testing.T) {
	f := &fakeApp{strategies: []string{"none", "atomic"}}
	srv := f.start(t)
	cfg := small(srv.URL)
	cfg.Locks = []string{"atomic"}
	cfg.Endpoints = []string{"/testLock"}

	rows, err := bench.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Lock != "atomic" || rows[0].Endpoint != "testLock" {
		t.Fatalf("want one atomic/testLock row, got %+v", rows)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		app  *fakeApp
		cfg  func(bench.Config) bench.Config
		run  string // "run" or "one"
		want string // substring of the error
	}{
		{"reset fails", &fakeApp{failReset: 500}, nil, "one", "POST /reset?stock=100: want 200, got 500"},
		{"stock fails", &fakeApp{failStock: 503}, nil, "one", "GET /stock?lock=atomic: want 200, got 503"},
		{"strategies fail", &fakeApp{failList: 500}, nil, "run", "GET /strategies: want 200, got 500"},
		{"no strategies", &fakeApp{strategies: []string{}}, nil, "run", "lists no lock"},
		{"unknown lock chosen", &fakeApp{}, func(c bench.Config) bench.Config {
			c.Locks = []string{"redlockk"}
			return c
		}, "run", `offers no lock "redlockk"`},
		{"app rejects lock", &fakeApp{}, nil, "bogus", "rejected 300 requests with 400"},
		{"bad endpoint", &fakeApp{}, func(c bench.Config) bench.Config {
			c.Endpoints = []string{"buy"}
			return c
		}, "run", `unknown endpoint "buy"`},
		{"negative requests", &fakeApp{}, func(c bench.Config) bench.Config {
			c.Requests = -1
			return c
		}, "run", "Requests must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.app
			srv := f.start(t)
			cfg := small(srv.URL)
			if tt.cfg != nil {
				cfg = tt.cfg(cfg)
			}
			var err error
			switch tt.run {
			case "run":
				_, err = bench.Run(t.Context(), cfg)
			case "one":
				_, err = bench.RunOne(t.Context(), cfg, "atomic", "sale")
			default:
				_, err = bench.RunOne(t.Context(), cfg, tt.run, "sale")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A control request the load balancer could not deliver (502: the instance
// it picked is restarting) is sent again; it is idempotent.
func TestControlRetriesBadGateway(t *testing.T) {
	f := &fakeApp{}
	f.start(t) // its defaults; the requests go through the proxy below
	var failed atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stock" && failed.Add(1) <= 2 {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "no answer from the instance"})
			return
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	row, err := bench.RunOne(t.Context(), small(proxy.URL), "atomic", "sale")
	if err != nil {
		t.Fatalf("two 502s on GET /stock, then a 200: %v", err)
	}
	if row.Verdict != bench.VerdictSafe || failed.Load() != 3 {
		t.Errorf("verdict %s after %d tries of GET /stock, want SAFE after 3", row.Verdict, failed.Load())
	}
}

func TestLoopbackOnly(t *testing.T) {
	tests := []struct {
		url         string
		allowRemote bool
		refused     bool
	}{
		{"http://192.0.2.1:8080", false, true},
		{"http://example.com", false, true},
		{"https://10.0.0.1/", false, true},
		{"http://[::ffff:10.0.0.1]:80", false, true},
		{"http://127.0.0.1:1", false, false},
		{"http://127.0.0.2:1", false, false},
		{"http://localhost:1", false, false},
		{"http://[::1]:1", false, false},
		{"http://192.0.2.1:1", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			cfg := bench.Config{URL: tt.url, AllowRemote: tt.allowRemote, Timeout: 300 * time.Millisecond}
			_, err := bench.RunOne(t.Context(), cfg, "atomic", "sale")
			if err == nil {
				t.Fatal("want an error: nothing listens there")
			}
			if got := errors.Is(err, bench.ErrNotLoopback); got != tt.refused {
				t.Fatalf("refused = %v, want %v (err %v)", got, tt.refused, err)
			}
		})
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	f := &fakeApp{strategies: []string{"slow"}}
	srv := f.start(t)
	cfg := small(srv.URL)
	cfg.Timeout = time.Minute // only cancellation can end these requests

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := bench.RunOne(ctx, cfg, "slow", "sale")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("returned %v after the start, want promptly after cancellation", d)
	}
	if n := f.hits.Load(); n > int64(cfg.Concurrency) {
		t.Errorf("%d requests sent, want at most the %d in flight when cancelled", n, cfg.Concurrency)
	}
}
