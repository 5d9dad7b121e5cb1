package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestHitsAt(t *testing.T) {
	few := []float64{0.1, 0.3, 0.5, 0.7}
	tests := []struct {
		name      string
		fractions []float64
		every     int
		n, stock  int
		want      []uint64
	}{
		{"window is the stock", few, 0, 600, 150, []uint64{15, 45, 75, 105}},
		{"window is n", few, 0, 100, 1000, []uint64{10, 30, 50, 70}},
		{"default size", few, 0, 5000, 1000, []uint64{100, 300, 500, 700}},
		{"a third", []float64{1.0 / 3}, 0, 600, 150, []uint64{50}},
		{"duplicates once, sorted", []float64{0.5, 0.1, 0.5}, 0, 10, 10, []uint64{1, 5}},
		{"clamped to the last hit", []float64{1, 2}, 0, 10, 100, []uint64{9}},
		{"none", nil, 0, 10, 10, nil},
		{"every third: a share, in a small race", nil, 3, 10, 100, []uint64{2, 5, 8}},
		{"every third: within the window", nil, 3, 600, 9, []uint64{2, 5, 8}},
		{"every third and a fraction, once each", []float64{0.5}, 3, 12, 12, []uint64{2, 5, 6, 8, 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hitsAt(tt.fractions, tt.every, tt.n, tt.stock); !slices.Equal(got, tt.want) {
				t.Errorf("hitsAt(%v, %d, %d, %d) = %v, want %v", tt.fractions, tt.every, tt.n, tt.stock, got, tt.want)
			}
		})
	}
}

// testLoad arms fault=crash on hits 3 and 7 and puts work=5ms on all.
func testLoad() *load {
	return &load{
		scenario: "test",
		every:    url.Values{"work": {"5ms"}},
		armed:    url.Values{"fault": {"crash"}},
		armAt:    []uint64{3, 7},
	}
}

func TestTargeterArmsByHitIndex(t *testing.T) {
	tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "setnx", "", nil, nil, testLoad())
	for i := range 10 {
		var tgt vegeta.Target
		if err := tg.target(&tgt); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(tgt.URL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if tgt.Method != http.MethodPost || u.Path != "/sale" || q.Get("lock") != "setnx" || q.Get("work") != "5ms" {
			t.Errorf("hit %d: %s %s", i, tgt.Method, tgt.URL)
		}
		if armed := q.Get("fault") == "crash"; armed != (i == 3 || i == 7) {
			t.Errorf("hit %d armed = %v: %s", i, armed, tgt.URL)
		}
		if _, ok := tg.faultAt(); ok != (i >= 3) {
			t.Errorf("hit %d: first fault recorded = %v, want %v", i, ok, i >= 3)
		}
	}
	if tg.armedTargets[0].URL != "http://127.0.0.1:1/sale?fault=crash&lock=setnx&work=5ms" {
		t.Errorf("armed URL %s", tg.armedTargets[0].URL)
	}

	plain := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "testLock", "a b", "", nil, nil, nil)
	var tgt vegeta.Target
	plain.target(&tgt)
	if tgt.URL != "http://127.0.0.1:1/testLock?lock=a+b" {
		t.Errorf("plain URL %s", tgt.URL)
	}
	if _, ok := plain.faultAt(); ok {
		t.Error("a plain run recorded a fault")
	}

	// A header (the stack's fault key) goes on every request.
	keyed := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "lua", "", nil, http.Header{"X-Fault-Key": {"k"}}, testLoad())
	for i := range 5 {
		var tgt vegeta.Target
		keyed.target(&tgt)
		if tgt.Header.Get("X-Fault-Key") != "k" {
			t.Errorf("hit %d: header %v, want the fault key", i, tgt.Header)
		}
	}

	// Items: hit i goes to item i mod K, the armed hits too.
	items := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "lua", "", []string{"1", "2", "3"}, nil, testLoad())
	for i := range 8 {
		var tgt vegeta.Target
		items.target(&tgt)
		u, _ := url.Parse(tgt.URL)
		if want := strconv.Itoa(i%3 + 1); u.Query().Get("sku") != want || items.item[tgt.URL] != want {
			t.Errorf("hit %d: %s (item %q), want sku=%s", i, tgt.URL, items.item[tgt.URL], want)
		}
		if armed := u.Query().Get("fault") == "crash"; armed != (i == 3 || i == 7) || items.isArmed(tgt.URL) != armed {
			t.Errorf("hit %d: armed %v, isArmed %v: %s", i, armed, items.isArmed(tgt.URL), tgt.URL)
		}
	}

	// wait= goes on every request; an armed request's own wait= wins.
	ld := testLoad()
	ld.armed = url.Values{"fault": {"check-pause"}, "pause": {"600ms"}, "wait": {"notify"}}
	waiting := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "lua", "backoff", nil, nil, ld)
	if want := "http://127.0.0.1:1/sale?lock=lua&wait=backoff&work=5ms"; waiting.plain[0].URL != want {
		t.Errorf("plain URL with wait %s, want %s", waiting.plain[0].URL, want)
	}
	if want := "http://127.0.0.1:1/sale?fault=check-pause&lock=lua&pause=600ms&wait=notify&work=5ms"; waiting.armedTargets[0].URL != want {
		t.Errorf("armed URL with wait %s, want %s", waiting.armedTargets[0].URL, want)
	}
}

// Many workers at once: every index is handed out once, so exactly the
// planned hits are armed, and each hook fires once.
func TestTargeterConcurrent(t *testing.T) {
	const n, workers = 20000, 64
	ld := testLoad()
	ld.armAt = hitsAt([]float64{0.1, 0.3, 0.5, 0.7}, 0, n, n)
	var fired atomic.Int64
	ld.hooks = []runHook{{at: 5000, about: "count", do: func(context.Context) error {
		fired.Add(1)
		return nil
	}}}
	tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "lua", "", nil, nil, ld)

	var armed, plain atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= n {
				var tgt vegeta.Target
				tg.target(&tgt)
				if strings.Contains(tgt.URL, "fault=crash") {
					armed.Add(1)
				} else {
					plain.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err := tg.wait(0, nil); err != nil {
		t.Fatal(err)
	}
	if armed.Load() != 4 || plain.Load() != n-4 {
		t.Errorf("%d armed and %d plain, want 4 and %d", armed.Load(), plain.Load(), n-4)
	}
	if fired.Load() != 1 {
		t.Errorf("hook fired %d times, want once", fired.Load())
	}
}

// A hook fires when its hit is handed out, not before, and its fault
// counts once it is done.
func TestHookFiresAtItsHit(t *testing.T) {
	fired := make(chan struct{}, 2)
	ld := &load{hooks: []runHook{{at: 4, about: "stop 2 of 5 masters", do: func(context.Context) error {
		fired <- struct{}{}
		return nil
	}}}}
	tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "redlock", "", nil, nil, ld)
	var tgt vegeta.Target
	for i := range 4 {
		tg.target(&tgt)
		select {
		case <-fired:
			t.Fatalf("hook fired at hit %d, want at hit 4", i)
		case <-time.After(10 * time.Millisecond):
		}
	}
	tg.target(&tgt) // hit 4
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("hook did not fire at hit 4")
	}
	for range 10 {
		tg.target(&tgt)
	}
	if err := tg.wait(0, nil); err != nil {
		t.Fatal(err)
	}
	if len(fired) != 0 {
		t.Error("hook fired twice")
	}
	if _, ok := tg.faultAt(); !ok {
		t.Error("the hook's fault was not recorded")
	}
}

// A hook with Outlast holds the run's last hits back until its Do has
// returned: they are sent after the fault, however long it took.
func TestHookOutlastHoldsTheRunsEnd(t *testing.T) {
	var released atomic.Bool
	release := make(chan struct{})
	sh := Shape{Hooks: []Hook{{At: 0.1, About: "kill the holder", Outlast: 0.5, Do: func(context.Context) error {
		<-release
		return nil
	}}}}
	ld := sh.load(100, 100)
	if len(ld.hooks) != 1 || ld.hooks[0].at != 10 || ld.hooks[0].holdFrom != 50 {
		t.Fatalf("hooks %+v, want one at hit 10 holding from hit 50", ld.hooks)
	}
	tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "redsync", "", nil, nil, ld)
	var tgt vegeta.Target
	for range 50 { // hits 0 to 49 go while the hook is running
		if err := tg.target(&tgt); err != nil {
			t.Fatal(err)
		}
	}
	early := make(chan int, 1)
	rest := make(chan struct{})
	go func() {
		defer close(rest)
		for i := 50; i < 100; i++ {
			tg.target(&tgt)
			if !released.Load() {
				select {
				case early <- i:
				default:
				}
			}
		}
	}()
	select {
	case <-rest:
		t.Fatal("the run's last half was handed out while the hook was running")
	case <-time.After(50 * time.Millisecond): // a bound on a thing that must not happen
	}
	released.Store(true)
	close(release)
	<-rest
	if err := tg.wait(0, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case i := <-early:
		t.Fatalf("hit %d handed out before the hook was done", i)
	default:
	}
}

func TestStall(t *testing.T) {
	ms := time.Millisecond
	var s stall
	// Not measuring yet (no fault): progress only moves the last mark.
	s.progress(100*ms, 0, false)
	s.progress(900*ms, 0, false)
	if s.longest != 0 {
		t.Fatalf("measured before the fault: %v", s.longest)
	}
	// Fault at 1000ms, progress at 1200ms, 3000ms, 3100ms.
	from := 1000 * ms
	s.progress(1200*ms, from, true)
	s.progress(3000*ms, from, true)
	s.progress(3100*ms, from, true)
	if s.longest != 1800*ms {
		t.Errorf("longest %v, want 1.8s", s.longest)
	}
	if c := s.current(4000*ms, from); c != 900*ms {
		t.Errorf("current %v, want 900ms", c)
	}
	s.close(6000*ms, from, true)
	if s.longest != 2900*ms {
		t.Errorf("after close: %v, want 2.9s (the tail)", s.longest)
	}
}

// stuckApp answers every request of a run 200 until a request carries
// fault=crash; from then on, unless recover, every request waits for the
// "lock" (wait) and answers 503, as the app does with a lock no one will
// release. With recover, the crash costs only its own request (a 502).
type stuckApp struct {
	wait    time.Duration
	recover bool

	mu           sync.Mutex
	stock, sold  int64
	stuck        bool
	hits, faults atomic.Int64
}

func (f *stuckApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	answer := func(code int, v any) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/reset":
		f.mu.Lock()
		f.stock, f.sold, f.stuck = 1000, 0, false
		f.mu.Unlock()
		answer(200, map[string]int64{"stock": 1000, "sold": 0, "num": 0})
	case "/stock":
		f.mu.Lock()
		defer f.mu.Unlock()
		answer(200, map[string]int64{"stock": f.stock, "sold": f.sold, "num": 0})
	case "/sale":
		f.hits.Add(1)
		f.mu.Lock()
		if r.URL.Query().Get("fault") == "crash" {
			f.faults.Add(1)
			f.stuck = !f.recover
			f.mu.Unlock()
			answer(http.StatusBadGateway, map[string]string{"error": "crashed"})
			return
		}
		if f.stuck {
			f.mu.Unlock()
			select {
			case <-time.After(f.wait):
			case <-r.Context().Done():
			}
			answer(http.StatusServiceUnavailable, map[string]string{"error": "lock not obtained", "reason": "lock_timeout"})
			return
		}
		defer f.mu.Unlock()
		time.Sleep(time.Millisecond)
		f.stock--
		f.sold++
		answer(200, map[string]any{"sold": true, "remaining": f.stock})
	default:
		http.NotFound(w, r)
	}
}

func runStuck(t *testing.T, f *stuckApp, ld *load, n int) Row {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg, err := Config{URL: srv.URL, Requests: n, Concurrency: 10, Stock: 1000, Timeout: 10 * time.Second}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(cfg)
	defer h.close()
	r, err := h.runOne(t.Context(), "setnx", "sale", nil, ld)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A lock left behind by a crash: nothing succeeds any more, the run is
// stopped once the stall passes the bound, and judged DEADLOCK.
func TestEarlyStopDeadlock(t *testing.T) {
	const bound = 400 * time.Millisecond
	f := &stuckApp{wait: 100 * time.Millisecond}
	ld := &load{scenario: "crash", armed: url.Values{"fault": {"crash"}}, armAt: []uint64{50}, stallBound: bound}
	start := time.Now()
	r := runStuck(t, f, ld, 100000)
	took := time.Since(start)

	if r.Verdict != VerdictDeadlock || !r.Stopped {
		t.Fatalf("verdict %s, stopped %v; want DEADLOCK, stopped (row %+v)", r.Verdict, r.Stopped, r)
	}
	if r.Scenario != "crash" || r.StallBoundMs != 400 {
		t.Errorf("scenario %q, bound %v", r.Scenario, r.StallBoundMs)
	}
	// It says when it stopped, of how many planned, and why.
	if r.Planned != 100000 || r.StoppedMs <= 400 || !strings.Contains(r.StopReason, "no request got through the lock") || !strings.Contains(r.StopReason, "bound of 400 ms") {
		t.Errorf("planned %d, stopped at %.1fms, reason %q: want 100000, past the bound, and why", r.Planned, r.StoppedMs, r.StopReason)
	}
	// Stopped past the bound, before the run's end (the requests' count
	// below): how soon after it is the machine's, not the rule's.
	if r.StallMs <= 400 {
		t.Errorf("stall %.1fms, want over the 400ms bound", r.StallMs)
	}
	if r.Requests >= 100000 || r.Requests != r.OK+sum(r.Codes) {
		t.Errorf("requests %d (ok %d, codes %v): want fewer than sent, all accounted for", r.Requests, r.OK, r.Codes)
	}
	if got := f.hits.Load(); int(got) != r.Requests {
		t.Errorf("the app saw %d requests, the row counts %d", got, r.Requests)
	}
	// Hits 0-49 sell if they reach the app before hit 50's crash: with 10
	// workers, up to 9 hits on either side of it are in flight together and
	// may arrive in either order.
	if r.OK < 50-9 || r.OK > 50+9 || r.Codes["502"] != 1 || r.Codes["503"] == 0 || f.faults.Load() != 1 {
		t.Errorf("want 50 sales (give or take the hits in flight) before the crash, its 502, then 503s: %+v", r)
	}
	if len(r.Armed) != 1 || r.Armed["502"] != 1 {
		t.Errorf("armed outcomes %v, want the one crash's 502", r.Armed)
	}
	t.Logf("stopped after %v, stall %.1fms", took.Round(time.Millisecond), r.StallMs)
}

// The same fault with a lock that recovers: the run goes to its end, the
// stall is short, the verdict comes from the counters.
func TestNoDeadlockWhenItRecovers(t *testing.T) {
	f := &stuckApp{wait: 100 * time.Millisecond, recover: true}
	ld := &load{scenario: "crash", armed: url.Values{"fault": {"crash"}}, armAt: []uint64{50, 150}, stallBound: 400 * time.Millisecond}
	r := runStuck(t, f, ld, 300)
	if r.Verdict != VerdictSafe || r.Stopped || r.Requests != 300 {
		t.Fatalf("verdict %s, stopped %v, requests %d: want SAFE, all 300 (row %+v)", r.Verdict, r.Stopped, r.Requests, r)
	}
	if r.Codes["502"] != 2 || r.OK != 298 || f.faults.Load() != 2 {
		t.Errorf("want the 2 crashed requests as 502 and 298 sales: %+v", r)
	}
	if r.StallMs <= 0 || r.StallMs >= 400 {
		t.Errorf("stall %.1fms, want short and measured", r.StallMs)
	}
	if len(r.Armed) != 1 || r.Armed["502"] != 2 {
		t.Errorf("armed outcomes %v, want the two crashes' 502s", r.Armed)
	}
}

// A plain run measures the stall over the whole run and never stops.
func TestPlainRunStall(t *testing.T) {
	f := &stuckApp{wait: 100 * time.Millisecond}
	r := runStuck(t, f, nil, 200)
	if r.Scenario != ScenarioNormal || r.Verdict != VerdictSafe || r.Stopped || r.StallBoundMs != 0 || r.Armed != nil {
		t.Fatalf("row %+v", r)
	}
	if r.StallMs <= 0 || r.StallMs > r.DurationMs {
		t.Errorf("stall %.2fms in a %.2fms run", r.StallMs, r.DurationMs)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// A Shape's fractions become hit indices in the run's window; a hook with
// no hit (an empty run) is dropped; the zero Shape is a plain run.
func TestShapePlacesHitsAndHooks(t *testing.T) {
	do := func(context.Context) error { return nil }
	sh := Shape{
		Scenario: "slow", Armed: url.Values{"work": {"600ms"}}, ArmAt: []float64{0.1, 0.3, 0.5, 0.7},
		Hooks:      []Hook{{At: 1.0 / 3, About: "stop 2 of 5 masters", Do: do}},
		StallBound: 3 * time.Second, Expected: VerdictOversold,
	}
	ld := sh.load(600, 150)
	if ld.name() != "slow" || !slices.Equal(ld.armAt, []uint64{15, 45, 75, 105}) || ld.bound() != 3*time.Second || ld.expect() != VerdictOversold {
		t.Errorf("load %+v", ld)
	}
	if len(ld.hooks) != 1 || ld.hooks[0].at != 50 || ld.hooks[0].about != "stop 2 of 5 masters" || !ld.faulty() {
		t.Errorf("hooks %+v", ld.hooks)
	}
	if len(sh.load(0, 150).hooks) != 0 {
		t.Error("a hook placed in an empty run")
	}
	plain := Shape{}.load(600, 150)
	if plain.name() != ScenarioNormal || plain.faulty() || plain.bound() != 0 || plain.expect() != "" {
		t.Errorf("zero shape %+v", plain)
	}
}

// A hook whose fault found nothing to strike (ErrNotStruck) fails the
// run only when there are more such misses than armed requests that gave
// up (503): the miss is then a staging that failed, not an armed request
// that never held the lock. It counts as no fault either way; any other
// error fails the run.
func TestHookThatFindsNothingToStrike(t *testing.T) {
	missing := func(context.Context) error { return fmt.Errorf("no holder: %w", ErrNotStruck) }
	for _, tc := range []struct {
		name   string
		do     []func(context.Context) error
		gaveUp int
		fails  bool
	}{
		{"one miss, one armed 503", []func(context.Context) error{missing}, 1, false},
		{"two misses, one armed 503", []func(context.Context) error{missing, missing}, 1, true},
		{"one miss, no 503", []func(context.Context) error{missing}, 0, true},
		{"another error", []func(context.Context) error{func(context.Context) error { return errors.New("broken") }}, 1, true},
	} {
		ld := &load{}
		for i, do := range tc.do {
			ld.hooks = append(ld.hooks, runHook{at: uint64(i), about: "cut a holder", do: do})
		}
		tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "pg-advisory", "", nil, nil, ld)
		var tgt vegeta.Target
		for range len(tc.do) {
			tg.target(&tgt)
		}
		err := tg.wait(tc.gaveUp, nil)
		if (err != nil) != tc.fails {
			t.Errorf("%s: %v, want failing %v", tc.name, err, tc.fails)
		}
		if _, ok := tg.faultAt(); ok {
			t.Errorf("%s: a hook that struck nothing counted as a fault", tc.name)
		}
	}
}

// An answer from inside the lock is progress for the stall watch: a 200,
// a 409 of the business (sold out, a stale token refused); a run guard's
// 409 is answered before any lock, and a 503 or 502 never got one.
func TestProgressed(t *testing.T) {
	for _, tc := range []struct {
		code uint16
		body string
		want bool
	}{
		{200, `{"sold":true,"remaining":3}`, true},
		{409, `{"reason":"sold_out","remaining":0}`, true},
		{409, `{"reason":"stale_token"}`, true},
		{409, `{"reason":"guard_lost"}`, false},
		{409, `{"reason":"run_in_progress"}`, false},
		{503, `{"reason":"lock_timeout"}`, false},
		{502, ``, false},
	} {
		if got := progressed(tc.code, []byte(tc.body)); got != tc.want {
			t.Errorf("progressed(%d, %s) = %v, want %v", tc.code, tc.body, got, tc.want)
		}
	}
}

// WhileArmed, in a hook, lasts as long as an armed request handed out is
// unanswered: the hook at the first armed hit looks past the second's
// hand-out, until both are answered; outside a run it is ctx's.
func TestWhileArmedLastsUntilTheArmedAreAnswered(t *testing.T) {
	ended := make(chan struct{})
	ld := &load{armAt: []uint64{2, 5}, armed: url.Values{"work": {"600ms"}}, hooks: []runHook{{at: 2, about: "cut", do: func(ctx context.Context) error {
		ctx, cancel := WhileArmed(ctx)
		defer cancel()
		<-ctx.Done()
		close(ended)
		return nil
	}}}}
	tg := newLoadTargeter(t.Context(), "http://127.0.0.1:1", "sale", "pg-advisory", "", nil, nil, ld)
	var tgt vegeta.Target
	still := func(when string) {
		t.Helper()
		select {
		case <-ended:
			t.Fatalf("the hook's look ended %s", when)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for range 6 {
		tg.target(&tgt) // hits 0-5: both armed handed out
	}
	still("with two armed requests out")
	tg.armed.answer()
	still("with one armed request still out")
	tg.armed.answer()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the hook's look did not end once every armed request was answered")
	}
	if err := tg.wait(0, nil); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := WhileArmed(t.Context())
	defer cancel()
	select {
	case <-ctx.Done():
		t.Fatal("outside a run, WhileArmed ended at once")
	default:
	}
}
