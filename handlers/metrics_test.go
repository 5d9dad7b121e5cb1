package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape asks the router for GET /metrics and parses Prometheus's text
// format.
func scrape(t *testing.T, e *env) map[string]*dto.MetricFamily {
	t.Helper()
	w := httptest.NewRecorder()
	e.router.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(w.Body)
	if err != nil {
		t.Fatalf("GET /metrics does not parse: %v", err)
	}
	return fams
}

// labelled returns the metric of fam whose labels are labels, or nil.
func labelled(fam *dto.MetricFamily, labels map[string]string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.Metric {
		match := len(m.Label) == len(labels)
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// GET /metrics counts what the requests did: every acquisition by lock
// and result, the waits and critical sections of those that got the lock,
// and the Go and process collectors.
func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	for range 3 {
		if code, _, body := e.do(t, "POST", "/sale?lock=lua"); code != 200 {
			t.Fatalf("sale: %d %v", code, body)
		}
	}
	e.mr.Set(inventory.StockLock, "another-holder")
	e.mr.SetTTL(inventory.StockLock, time.Minute)
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&try=0"); code != 503 {
		t.Fatalf("sale of a held lock with try=0: %d %v", code, body)
	}
	e.do(t, "POST", "/sale?lock=atomic") // no lock: no acquisition
	e.mr.Close()                         // Redis gone: the dial fails, or outlasts the wait
	if code, _, body := e.do(t, "POST", "/sale?lock=lua"); code != 503 {
		t.Fatalf("sale with Redis down: %d %v", code, body)
	}

	fams := scrape(t, e)
	acq := fams["lockladder_lock_acquisitions_total"]
	for _, c := range []struct {
		result string
		want   float64
	}{{"obtained", 3}} {
		m := labelled(acq, map[string]string{"lock": "lua", "result": c.result})
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("acquisitions{lock=lua,result=%s} = %v, want %v", c.result, m, c.want)
		}
	}
	// try=0 on a held lock is a timeout; with Redis down, a timeout or
	// unavailable, whichever came first.
	timeout := labelled(acq, map[string]string{"lock": "lua", "result": "timeout"}).GetCounter().GetValue()
	unavailable := labelled(acq, map[string]string{"lock": "lua", "result": "unavailable"}).GetCounter().GetValue()
	if timeout < 1 || timeout+unavailable != 2 {
		t.Errorf("acquisitions{lock=lua}: timeout %v, unavailable %v; want 2 not had, at least the try=0 one a timeout", timeout, unavailable)
	}
	if m := labelled(acq, map[string]string{"lock": "atomic", "result": "obtained"}); m != nil {
		t.Errorf("atomic takes no lock, but counts an acquisition: %v", m)
	}
	for _, name := range []string{"lockladder_lock_wait_seconds", "lockladder_critical_section_seconds"} {
		m := labelled(fams[name], map[string]string{"lock": "lua"})
		if m == nil || m.GetHistogram().GetSampleCount() != 3 || m.GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("%s{lock=lua}: %v, want 3 observations", name, m)
		}
	}
	// The try=0 on the held lock was a try that did not get it; fair counts
	// too, and atomic, which takes no lock, does not.
	if m := labelled(fams["lockladder_lock_retries_total"], map[string]string{"lock": "lua"}); m == nil || m.GetCounter().GetValue() < 1 {
		t.Errorf("retries{lock=lua} = %v, want at least the try=0 on the held lock", m)
	}
	if m := labelled(fams["lockladder_lock_handoffs_total"], map[string]string{"lock": "fair"}); m == nil {
		t.Error("GET /metrics lacks handoffs{lock=fair}")
	}
	if m := labelled(fams["lockladder_lock_retries_total"], map[string]string{"lock": "atomic"}); m != nil {
		t.Errorf("atomic takes no lock, but counts retries: %v", m)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("GET /metrics lacks %s", name)
		}
	}
}

// The Grafana dashboard the compose file provisions (deploy/grafana) asks
// only for series GET /metrics serves: every metric its queries name is
// one the app exports (a histogram's _bucket, _sum and _count included).
func TestDashboardQueriesTheAppsMetrics(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	e.do(t, "POST", "/sale?lock=lua")
	served := map[string]bool{}
	for name, fam := range scrape(t, e) {
		served[name] = true
		if fam.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				served[name+s] = true
			}
		}
	}
	raw, err := os.ReadFile("../deploy/grafana/dashboards/lockladder.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard uid %q, %d panels", d.UID, len(d.Panels))
	}
	metric := regexp.MustCompile(`\b(lockladder_[a-z_]+|go_[a-z_]+|process_[a-z_]+)\b`)
	asked := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := metric.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric of the app", p.Title, q.Expr)
			}
			for _, n := range names {
				asked[n] = true
				if !served[n] {
					t.Errorf("panel %q asks for %s, which GET /metrics does not serve", p.Title, n)
				}
			}
		}
	}
	for _, want := range []string{"lockladder_lock_wait_seconds_bucket", "lockladder_lock_acquisitions_total", "lockladder_critical_section_seconds_bucket"} {
		if !asked[want] {
			t.Errorf("the dashboard never shows %s", want)
		}
	}
}

// GET /metrics counts the releases that failed, per lock and reason: a
// lease that lapsed during the business is not_held (the lock's own
// error says so only at the release, after the write), a back end gone
// by then is error, and a release that went through counts nothing.
func TestMetricsReleaseFailures(t *testing.T) {
	var e *env
	var during func()
	e = newEnvWith(t, &handlers.FaultActions{Sleep: func(time.Duration) { during() }})
	e.do(t, "POST", "/reset?stock=5")
	// The business (work=) outlives the 1s lease: the key expires.
	during = func() { e.mr.FastForward(2 * time.Second) }
	for _, l := range []string{"lua", "redislock"} {
		if code, _, body := e.do(t, "POST", "/sale?lock="+l+"&work=5ms"); code != 200 {
			t.Fatalf("%s, its lease lapsed in the business: %d %v; want the sale (nothing fences it)", l, code, body)
		}
	}
	if code, _, body := e.do(t, "POST", "/sale?lock=lua"); code != 200 {
		t.Fatalf("a plain sale: %d %v", code, body)
	}
	// Redis gone while the lock is held: the write and the release fail.
	during = func() { e.mr.Close() }
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&work=5ms"); code != 503 {
		t.Fatalf("Redis gone in the business: %d %v, want 503", code, body)
	}

	fams := scrape(t, e)
	fam := fams["lockladder_lock_release_failures_total"]
	for _, c := range []struct {
		lock, reason string
		want         float64
	}{{"lua", "not_held", 1}, {"redislock", "not_held", 1}, {"lua", "error", 1}} {
		m := labelled(fam, map[string]string{"lock": c.lock, "reason": c.reason})
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("release_failures{lock=%s,reason=%s} = %v, want %v", c.lock, c.reason, m, c.want)
		}
	}
	if m := labelled(fam, map[string]string{"lock": "redislock", "reason": "error"}); m != nil {
		t.Errorf("redislock's one release failed for its lapsed lease only, yet: %v", m)
	}
}
