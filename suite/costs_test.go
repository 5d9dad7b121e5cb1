package suite_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench/cost"
	"github.com/lockladder/lockladder/internal/fakeshop"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// costShop is one instance that sells and counts exactly, each lock
// taking its own time per request under one mutex (a lock that
// serializes: its throughput is 1/delay): the costs a check measures.
type costShop struct {
	mu     sync.Mutex
	delay  map[string]time.Duration
	item   *fakeshop.Item
	loaded []string // the lock of every run, in order (its first load request)
	last   string
}

func (c *costShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Instance", "app1")
	q := r.URL.Query()
	switch r.URL.Path {
	case "/healthz":
		fakeshop.WriteJSON(w, 200, map[string]string{"status": "ok"})
	case "/strategies":
		var list []map[string]string
		for _, n := range []string{"none", "lua", "fair", "pg-advisory", "zookeeper", "atomic"} {
			s := map[string]string{"name": n}
			if n == "zookeeper" {
				s["unavailable"] = "zookeeper is not installed"
			}
			list = append(list, s)
		}
		fakeshop.WriteJSON(w, 200, list)
	case "/reset":
		c.mu.Lock()
		c.last = ""
		c.mu.Unlock()
		n, _ := strconv.ParseInt(q.Get("stock"), 10, 64)
		c.item.Reset(n)
		fakeshop.WriteJSON(w, 200, map[string]int64{"stock": n, "sold": 0, "num": 0})
	case "/stock":
		fakeshop.WriteJSON(w, 200, c.item.Counters())
	case "/sale", "/testLock":
		l := q.Get("lock")
		c.mu.Lock()
		if c.last == "" {
			c.last = l
			c.loaded = append(c.loaded, l+r.URL.Path)
		}
		time.Sleep(c.delay[l])
		c.mu.Unlock()
		if r.URL.Path == "/sale" {
			c.item.Sell(w, 0)
		} else {
			c.item.Incr(w, 0)
		}
	default:
		http.NotFound(w, r)
	}
}

type costStack struct{ srv *httptest.Server }

func (s costStack) URL() string            { return s.srv.URL }
func (s costStack) InstanceURLs() []string { return []string{s.srv.URL} }
func (s costStack) Stop() error            { s.srv.Close(); return nil }

// A check writes a baseline of every rung it ran, each twice (down the
// ladder, then up); the reference runs first (a warm-up, then the one
// kept) and after every Every rungs; a lock the app cannot serve here is
// not run; and the check fails a rung past the bound, naming it.
func TestCostsCommandCatchesARegression(t *testing.T) {
	shop := &costShop{item: fakeshop.NewItem(0), delay: map[string]time.Duration{
		"lua": time.Millisecond, "fair": time.Millisecond, "pg-advisory": time.Millisecond,
	}}
	cfg := suite.CostConfig{
		Size:  cost.Size{Requests: 60, Concurrency: 6, Stock: 12},
		Every: 2,
		Start: func(context.Context, stack.Config) (suite.Stack, error) {
			return costStack{httptest.NewServer(shop)}, nil
		},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "baseline.json")
	var out bytes.Buffer
	if err := suite.CostsCommand(t.Context(), cfg, path, true, 1, "abc1234", dir, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	b, err := cost.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range b.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := "fair/sale fair/testLock lua/sale lua/testLock none/sale none/testLock pg-advisory/sale pg-advisory/testLock"; strings.Join(keys, " ") != want {
		t.Errorf("baseline keys %v, want %s", keys, want)
	}
	if b.Size != cfg.Size || b.Commit != "abc1234" || b.Runs != 1 {
		t.Errorf("baseline %+v", b)
	}
	if !strings.Contains(out.String(), "not run: zookeeper: zookeeper is not installed") {
		t.Errorf("output does not say zookeeper was not run:\n%s", out.String())
	}
	want := []string{"atomic", "atomic", "none", "lua", "atomic", "fair", "pg-advisory", "atomic",
		"pg-advisory", "fair", "atomic", "lua", "none", "atomic"}
	var got []string
	for _, l := range shop.loaded {
		if lock, ep, _ := strings.Cut(l, "/"); ep == "sale" {
			got = append(got, lock)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs on /sale in order %v, want %v", got, want)
	}

	// Against a baseline no run can miss (every rung far faster than
	// atomic is never, and its tail far longer), the check passes; made
	// to say pg-advisory on /sale beats atomic a hundredfold, it fails
	// there and only there, naming the figure, the baseline and the
	// bound; a rung the baseline lacks fails it too. (The bound itself is
	// chosen from real runs: bench/cost and MEASUREMENTS.md.)
	for k := range b.Ratios {
		b.Ratios[k] = cost.Ratio{RPS: 1e-6, P99: 1e6}
	}
	if err := cost.WriteBaseline(path, b); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	cfg.Size = cost.Size{} // the baseline's
	if err := suite.CostsCommand(t.Context(), cfg, path, false, 1, "", dir, &out); err != nil {
		t.Fatalf("a check within its baseline failed: %v\n%s", err, out.String())
	}
	b.Ratios["pg-advisory/sale"] = cost.Ratio{RPS: 100, P99: 1e-3}
	delete(b.Ratios, "lua/testLock")
	if err := cost.WriteBaseline(path, b); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = suite.CostsCommand(t.Context(), cfg, path, false, 1, "", dir, &out)
	if err == nil {
		t.Fatalf("a rung past the bound passed:\n%s", out.String())
	}
	for _, want := range []string{
		"3 past the bound",
		"pg-advisory/sale: throughput ", " of atomic's, baseline 100: ", "x slower, bound 4x",
		"pg-advisory/sale: p99 ", ", baseline 0.001: ", "x longer, bound 6x",
		"lua/testLock: measured, but not in the baseline (make bench-baseline)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant %q in it", err, want)
		}
	}
	if !strings.Contains(out.String(), "FAIL") {
		t.Errorf("the table marks no rung:\n%s", out.String())
	}
	reports, _ := filepath.Glob(filepath.Join(dir, "bench-check-*.json"))
	if len(reports) == 0 {
		t.Error("no bench-check report written")
	}
}

// The committed baseline holds every rung of the ladder on both
// endpoints but the reference, at the check's size.
func TestCostBaselineCoversTheLadder(t *testing.T) {
	b, err := cost.ReadBaseline(filepath.Join("..", "bench", "cost", "baseline.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Size != suite.CostSize {
		t.Errorf("the baseline's size %+v, the check's %+v: make bench-baseline", b.Size, suite.CostSize)
	}
	for _, l := range suite.LadderLocks() {
		for _, ep := range []string{"sale", "testLock"} {
			if _, ok := b.Ratios[cost.Key(l, ep)]; ok == (l == cost.Reference) {
				t.Errorf("%s in the baseline: %v, want %v", cost.Key(l, ep), ok, l != cost.Reference)
			}
		}
	}
	if want := 2 * (len(suite.LadderLocks()) - 1); len(b.Ratios) != want {
		t.Errorf("%d ratios in the baseline, want %d", len(b.Ratios), want)
	}
}
