package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/failover"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/stack"
)

func TestErrorClasses(t *testing.T) {
	ops := []history.Op{
		{Code: 200, Outcome: history.Applied}, {Code: 409, Outcome: history.SoldOut},
		{Code: 503, Outcome: history.Rejected}, {Code: 503, Outcome: history.Rejected},
		{Code: 503, Outcome: history.Unknown}, {Code: 502, Outcome: history.Unknown},
		{Code: 0, Outcome: history.Unknown}, {Code: 500, Outcome: history.Unknown},
		{Code: 400, Outcome: history.Rejected},
	}
	got := report.Counts(errorClasses(ops))
	if want := "502:1 4xx:1 503 lock:2 503 redis:1 5xx:1 conn:1"; got != want {
		t.Fatalf("errors %q, want %q", got, want)
	}
	if report.Counts(nil) != "-" {
		t.Fatal("no errors is -")
	}
}

func TestViolations(t *testing.T) {
	safe := bench.Row{Initial: 10, Remaining: 0, Sold: 10, OK: 10, Linearizable: "ok"}
	for _, tc := range []struct {
		name string
		r    bench.Row
		want int
	}{
		{"safe", safe, 0},
		{"answers lost within the possibly applied", bench.Row{Initial: 10, Sold: 10, OK: 8, PossiblyApplied: 2, Linearizable: "ok"}, 0},
		{"more gone than answers and possibly applied", bench.Row{Initial: 10, Sold: 10, OK: 7, PossiblyApplied: 2, Linearizable: "ok"}, 1},
		{"sold twice", bench.Row{Initial: 10, Sold: 11, OK: 10}, 1},
		{"illegal and overlapping", bench.Row{Initial: 10, Sold: 10, OK: 10, Linearizable: "illegal", Overlaps: 3}, 4},
		{"stock below zero", bench.Row{Initial: 10, Remaining: -1, Sold: 11, OK: 11}, 1},
	} {
		if got := violations(tc.r); got != tc.want {
			t.Errorf("%s: %d violations, want %d", tc.name, got, tc.want)
		}
	}
}

func TestFirstProgressAndPercentile(t *testing.T) {
	began := time.Unix(100, 0)
	r := bench.Row{Began: began, Ops: []history.Op{
		{Call: 0, Return: int64(time.Second), Outcome: history.Applied},                                  // before the fault
		{Call: int64(2 * time.Second), Return: int64(3 * time.Second), Outcome: history.Rejected},        // no progress
		{Call: int64(2 * time.Second), Return: int64(2500 * time.Millisecond), Outcome: history.SoldOut}, // the first after it
		{Call: int64(2100 * time.Millisecond), Return: int64(2600 * time.Millisecond), Outcome: history.Applied},
	}}
	d, ok := firstProgress(r, began.Add(2*time.Second))
	if !ok || d != 500*time.Millisecond {
		t.Fatalf("firstProgress = %s %v, want 500ms", d, ok)
	}
	if _, ok := firstProgress(r, began.Add(4*time.Second)); ok {
		t.Fatal("no progress after the end")
	}
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(lat, 0.99); p != 100*time.Millisecond {
		t.Fatalf("p99 = %s", p)
	}
	if percentile(nil, 0.99) != 0 {
		t.Fatal("p99 of nothing is 0")
	}
}

func TestChaosTables(t *testing.T) {
	rows := []ChaosRow{
		{Fault: 1, Name: "kill", Lock: "lua", Runs: 1, Requests: 1000, OK: 300, Errors: map[string]int{"502": 14},
			RecoveryMs: 1901.2, Figure: "killed app2 while it held the lock", Pass: true},
		{Fault: 5, Name: "failover", Lock: "redlock", Runs: 20, Errors: map[string]int{}, RecoveryMs: -1,
			Figure: "double grants 1 of 20", Want: "no double grant", Violations: 1},
	}
	var b bytes.Buffer
	if err := WriteChaosTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recovery ms", "1901.2", "502:14", "yes", "NO: want no double grant"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	writeChaosMarkdown(&b, rows)
	if lines := strings.Split(strings.TrimSpace(b.String()), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[1], "| ---:") {
		t.Errorf("markdown:\n%s", b.String())
	}
}

func TestRunChaosRefusesUnknownFaults(t *testing.T) {
	if _, err := RunChaos(context.Background(), ChaosConfig{Faults: []int{9}}); err == nil || !strings.Contains(err.Error(), "no fault 9") {
		t.Fatalf("err = %v", err)
	}
	if _, err := RunChaos(context.Background(), ChaosConfig{Repeats: -1}); err == nil {
		t.Fatal("a negative size must be refused")
	}
}

// miniShop is the app's contract at its smallest, as one instance that is
// also its own load balancer: a safe sale, or (lbDown) the load balancer's
// 502 for an instance that is down.
type miniShop struct {
	mu     sync.Mutex
	stock  int64
	sold   int64
	lbDown atomic.Bool
}

func (m *miniShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Instance", "app1")
	w.Header().Set("Content-Type", "application/json")
	m.mu.Lock()
	defer m.mu.Unlock()
	switch r.URL.Path {
	case "/healthz":
		io.WriteString(w, `{"status":"ok"}`)
	case "/strategies":
		io.WriteString(w, `[{"name":"lua"}]`)
	case "/reset":
		m.stock, _ = strconv.ParseInt(r.URL.Query().Get("stock"), 10, 64)
		m.sold = 0
		fmt.Fprintf(w, `{"stock":%d,"sold":0,"num":0}`, m.stock)
	case "/stock":
		fmt.Fprintf(w, `{"stock":%d,"sold":%d,"num":0}`, m.stock, m.sold)
	case "/sections":
		io.WriteString(w, `{"complete":true,"sections":[],"holding":[]}`)
	case "/sale":
		switch {
		case m.lbDown.Load():
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, `{"error":"no answer from the instance","upstream_bytes_sent":"0"}`)
		case m.stock <= 0:
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"sold":false,"remaining":0,"reason":"sold_out"}`)
		default:
			m.stock--
			m.sold++
			fmt.Fprintf(w, `{"sold":true,"remaining":%d}`, m.stock)
		}
	default:
		http.NotFound(w, r)
	}
}

type miniStack struct{ url string }

func (t miniStack) URL() string            { return t.url }
func (t miniStack) InstanceURLs() []string { return []string{t.url} }
func (t miniStack) Stop() error            { return nil }

// TestMeasuredTriesAgain: a run whose fault could not be applied, or whose
// answers were mostly the load balancer's 502s, measures nothing: it is
// run again, and after three such runs reported as not run, with why.
func TestMeasuredTriesAgain(t *testing.T) {
	shop := &miniShop{}
	srv := httptest.NewServer(shop)
	defer srv.Close()
	c, err := newChaos(ChaosConfig{Requests: 40, Concurrency: 4, Stock: 20})
	if err != nil {
		t.Fatal(err)
	}
	top := miniStack{srv.URL}
	mk := func(failures int, calls *int) func() faultRun {
		return func() faultRun {
			return faultRun{sc: Scenario{Name: "test", Hooks: []Hook{{At: 0.5, Do: func(context.Context, Stack) error {
				*calls++
				if *calls <= failures {
					return fmt.Errorf("%w: the holder never held the lock", errNotApplied)
				}
				return nil
			}}}}, figure: func(bench.Row) ChaosRow { return ChaosRow{Pass: true} }}
		}
	}

	var calls int
	r, _, m, err := c.measured(context.Background(), top, "lua", c.base, mk(1, &calls))
	if err != nil || m.why != "" || m.retried != 1 || r.Requests != 40 || calls != 2 {
		t.Fatalf("one failed application: row of %d requests, %+v, %v after %d calls; want the second run, retried once", r.Requests, m, err, calls)
	}

	calls = 0
	_, _, m, err = c.measured(context.Background(), top, "lua", c.base, mk(attempts, &calls))
	if err != nil || m.retried != attempts-1 || !strings.Contains(m.why, "never held") || calls != attempts {
		t.Fatalf("never applied: %+v, %v after %d calls; want not run, saying why", m, err, calls)
	}

	shop.lbDown.Store(true)
	calls = 0
	_, _, m, err = c.measured(context.Background(), top, "lua", c.base, mk(0, &calls))
	if err != nil || !strings.Contains(m.why, "instances were down") || m.retried != attempts-1 {
		t.Fatalf("mostly 502s: %+v, %v; want not run: the run says nothing about the lock", m, err)
	}
}

// TestChaosLibraryFaults: each library rung runs the faults that strike
// its back end, after the lab's safe rungs, and its stack starts the
// server it needs.
func TestChaosLibraryFaults(t *testing.T) {
	c, err := newChaos(ChaosConfig{})
	if err != nil {
		t.Fatal(err)
	}
	safe := []string{"lua", "fenced", "fair", "cohort", "cohort-carry"}
	all := append(append(slices.Clone(safe), LibraryLocks()...), PGLocks()...)
	onRedis := append(slices.Clone(safe), "redsync", "redislock", "redislock-refresh")
	for _, tc := range []struct {
		got, want []string
	}{
		{c.locksFor("kill"), all},
		{c.locksFor("drain"), all},
		{c.locksFor("redis-stop"), append(slices.Clone(onRedis), "rueidislock")},
		{c.locksFor("postgres-stop"), PGLocks()},
		{c.locksFor("cluster failover"), onRedis},
		{c.libraries("failover"), []string{"redsync", "redislock", "redislock-refresh"}},
		{c.partitionLocks(), []string{"redlock", "redsync-redlock"}},
		{c.safeLocks(2), []string{"lua", "fenced"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}

	// Fault 5 runs each library it strikes through package failover, with
	// an expectation of its own beside lua's.
	for _, l := range append([]string{"lua"}, c.libraries("failover")...) {
		if !slices.Contains(failover.SingleLocks, l) || failoverWant[l] == "" {
			t.Errorf("fault 5 would run %s: in failover.SingleLocks %v, want %q", l, slices.Contains(failover.SingleLocks, l), failoverWant[l])
		}
	}

	c, err = newChaos(ChaosConfig{Locks: []string{"zk-lock", "redislock"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.locksFor("kill"); !slices.Equal(got, []string{"zk-lock", "redislock"}) {
		t.Errorf("kill with -locks zk-lock,redislock: %v", got)
	}
	if got := c.locksFor("redis-stop"); !slices.Equal(got, []string{"redislock"}) {
		t.Errorf("redis-stop with -locks zk-lock,redislock: %v", got)
	}
	if got := c.libraries("failover"); !slices.Equal(got, []string{"redislock"}) {
		t.Errorf("failover with -locks zk-lock,redislock: %v", got)
	}
	if got := c.safeLocks(1); len(got) != 0 {
		t.Errorf("no safe rung given, yet %v (kill under load would run it)", got)
	}

	cfg := withServers(stack.Config{ZooKeeper: stack.Off, Etcd: stack.Off}, stack.Config{Etcd: stack.Embedded}, []string{"zk-lock", "etcd-mutex"})
	if cfg.ZooKeeper != stack.Auto || cfg.Etcd != stack.Embedded {
		t.Errorf("servers for zk-lock and etcd-mutex: zookeeper %q, etcd %q; want auto and the template's embedded", cfg.ZooKeeper, cfg.Etcd)
	}
	if cfg := withServers(stack.Config{ZooKeeper: stack.Off, Etcd: stack.Off}, stack.Config{}, []string{"redsync"}); cfg.ZooKeeper != stack.Off || cfg.Etcd != stack.Off {
		t.Errorf("redsync's stack starts %q zookeeper and %q etcd; want neither", cfg.ZooKeeper, cfg.Etcd)
	}
	if d, _ := orphanBound("lua"); d != chaosLockTTL+500*time.Millisecond {
		t.Errorf("a Redis key's orphan bound %s, want the lease and half a second", d)
	}
	if cfg := withServers(stack.Config{Postgres: stack.Off}, stack.Config{}, []string{"pg-advisory-xact"}); cfg.Postgres != stack.Auto {
		t.Errorf("pg-advisory-xact's stack starts postgres %q, want auto", cfg.Postgres)
	}
	if d, _ := orphanBound("pg-advisory"); d >= chaosLockTTL {
		t.Errorf("a PostgreSQL session's orphan bound %s, want less than a lease: the server ends it when the socket closes", d)
	}
	if d, _ := orphanBound("etcd-mutex"); d <= chaosLockTTL+500*time.Millisecond {
		t.Errorf("etcd's orphan bound %s, want more than a Redis key's: etcd revokes at its next check", d)
	}
}

// With lanes, the longest faults start first (the repeats, the failover
// trials, the retry trap), the others in their order, and an error stops
// the faults not yet started.
func TestChaosLanesLongestFirst(t *testing.T) {
	order := []int{1, 2, 3, 4, 5, 6, 7, 8}
	slices.SortStableFunc(order, func(a, b int) int { return rank(a) - rank(b) })
	if want := []int{7, 5, 4, 1, 2, 3, 6, 8}; !slices.Equal(order, want) {
		t.Errorf("lanes take the faults in order %v, want %v", order, want)
	}
	var mu sync.Mutex
	started := 0
	_, err := RunChaos(t.Context(), ChaosConfig{Faults: []int{1, 4, 7}, Lanes: 2,
		Start: func(context.Context, stack.Config) (Stack, error) {
			mu.Lock()
			started++
			mu.Unlock()
			return nil, errors.New("no stack here")
		}})
	if err == nil || !strings.Contains(err.Error(), "no stack here") {
		t.Fatalf("error %v, want the stacks' error", err)
	}
	if strings.Contains(err.Error(), "chaos fault 1:") {
		t.Errorf("fault 1 started after the first two failed: %v", err)
	}
	if started == 0 || started > 2*3 {
		t.Errorf("%d stacks started", started)
	}
}
