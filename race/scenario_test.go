package race_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/lock/speed/notify"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
)

// theatre is three app instances on one miniredis, given the fault key,
// behind a round-robin proxy: a running stack as the race service sees
// it. A paused instance only sleeps the request (a SIGSTOP would stop the
// test), and a crash goes on.
type theatre struct {
	lb   string
	apps []string
	key  string
	mr   *miniredis.Miniredis
}

func (th *theatre) URL() string            { return th.lb }
func (th *theatre) InstanceURLs() []string { return th.apps }
func (th *theatre) Stop() error            { return fmt.Errorf("a race never stops the stack") }
func (th *theatre) FaultKey() string       { return th.key }
func (th *theatre) Config() stack.Config {
	return stack.Config{Instances: len(th.apps), Redis: stack.Embedded}
}

func newTheatre(t *testing.T, key string) (*theatre, *httptest.Server) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	// miniredis ages keys only when told: as the stack's does, every 10ms.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				mr.FastForward(10 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(stop) })
	th := &theatre{key: key, mr: mr}
	var targets []*url.URL
	for i := range 3 {
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		n := notify.New(rdb, notify.Options{})
		t.Cleanup(func() { n.Close() })
		app := httptest.NewServer(handlers.New(handlers.Config{
			Instance:  fmt.Sprintf("app%d", i+1),
			Inventory: inventory.New(rdb),
			Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: 2 * time.Second, Wait: 5 * time.Second,
				Retry: lock.FixedSleep(5 * time.Millisecond), Notifier: n}, lock.RedlockOptions{}),
			MaxStock: 1000,
			Faults:   &handlers.FaultActions{Exit: func(int) {}, Stop: time.Sleep},
			FaultKey: key,
		}))
		t.Cleanup(app.Close)
		th.apps = append(th.apps, app.URL)
		u, _ := url.Parse(app.URL)
		targets = append(targets, u)
	}
	var next atomic.Uint64
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(targets[next.Add(1)%uint64(len(targets))])
	}})
	t.Cleanup(lb.Close)
	th.lb = lb.URL
	races := httptest.NewServer(race.New(lb.URL, th))
	t.Cleanup(races.Close)
	return th, races
}

// result decodes a race's last event, its result.
func result(t *testing.T, evs []event) race.Result {
	t.Helper()
	last := evs[len(evs)-1]
	if last.name != "result" {
		t.Fatalf("the race ended with %s %v", last.name, last.data)
	}
	b, _ := json.Marshal(last.data)
	var res race.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A race under a scenario runs it on the running stack as the matrix
// does, its faults armed with the stack's key, and ends with the verdict
// the matrix gives for the pair: lua's lease lapses under slow business
// (OVERSOLD, as the ladder says); fenced refuses the late write of a
// holder paused past its lease (SAFE), which the timeline marks.
func TestRaceUnderAScenario(t *testing.T) {
	_, srv := newTheatre(t, "k3y")
	code, evs := readEvents(t, "POST", srv.URL+"/race?lock=lua&endpoint=sale&scenario=slow&n=200&c=20")
	if code != 200 {
		t.Fatalf("slow lua: %d %v", code, evs)
	}
	res := result(t, evs)
	if res.Scenario != "slow" || res.Verdict != "OVERSOLD" || res.Expected != "OVERSOLD" || res.Requests != 200 || res.Initial != 300 {
		t.Errorf("slow lua: scenario %q, verdict %s (expected %q), %d requests on stock %d; want slow, OVERSOLD as expected, 200 on the ladder's 300",
			res.Scenario, res.Verdict, res.Expected, res.Requests, res.Initial)
	}
	// Under load an armed request may wait out its bound (503): it held
	// nothing, its fault never struck, and the timeline draws only those
	// that did.
	armed, gaveUp := 0, res.Armed["503"]
	for _, n := range res.Armed {
		armed += n
	}
	tl := res.Timeline
	if armed != 4 || tl == nil || tl.LeaseMs != 200 || len(tl.Faults) != 4-gaveUp || tl.Overlaps == 0 || len(tl.Instances) != 3 {
		t.Fatalf("slow lua: armed %v; its timeline: %+v", res.Armed, tl)
	}
	struck := 0
	for _, f := range tl.Faults {
		if f.About != "work=600ms" || f.Lane < 0 || f.Section < 0 || f.Code != 200 {
			t.Errorf("slow lua's fault %+v: want the armed work on the section it held", f)
			continue
		}
		struck++
		s := tl.Sections[f.Section]
		if held := s[2] - s[1]; held < 600000 {
			t.Errorf("slow lua's armed section held %dus, want its 600ms business", held)
		}
	}
	if struck == 0 {
		t.Errorf("none of slow lua's armed requests held the lock: %+v", tl.Faults)
	}

	code, evs = readEvents(t, "POST", srv.URL+"/race?lock=fenced&endpoint=sale&scenario=pause&n=200&c=20")
	if code != 200 {
		t.Fatalf("pause fenced: %d %v", code, evs)
	}
	res = result(t, evs)
	if res.Verdict != "SAFE" || res.Expected != "SAFE" || res.Timeline.Refused == 0 || res.Timeline.Overlaps != 0 {
		t.Errorf("pause fenced: verdict %s (expected %s), %d refused, %d overlaps; want SAFE with a stale write refused",
			res.Verdict, res.Expected, res.Timeline.Refused, res.Timeline.Overlaps)
	}
}

// skew on the running stack: instance 3's clock, 2s ahead in the matrix,
// is skew=2s on every third request, armed with the stack's key. getset
// judges its lease by the request's clock, so a skewed request takes the
// lock from a live holder (OVERSOLD, the ladder's verdict); lua's lease
// is Redis's, and the same race leaves it SAFE.
func TestRaceUnderSkew(t *testing.T) {
	_, srv := newTheatre(t, "k3y")
	for _, tc := range []struct{ lock, verdict string }{{"getset", "OVERSOLD"}, {"lua", "SAFE"}} {
		code, evs := readEvents(t, "POST", srv.URL+"/race?lock="+tc.lock+"&endpoint=sale&scenario=skew")
		if code != 200 {
			t.Fatalf("skew %s: %d %v", tc.lock, code, evs)
		}
		res := result(t, evs)
		if res.Scenario != "skew" || res.Verdict != tc.verdict || res.Expected != tc.verdict || res.Requests != 600 {
			t.Errorf("skew %s: scenario %q, verdict %s (expected %q), %d requests; want skew, %s as expected, the ladder's 600",
				tc.lock, res.Scenario, res.Verdict, res.Expected, res.Requests, tc.verdict)
		}
		tl := res.Timeline
		if tl == nil {
			t.Fatalf("skew %s: no timeline", tc.lock)
		}
		checkSkewDrawn(t, "skew "+tc.lock, tl.Faults, 100, res.Armed)
		if (tl.Overlaps > 0) != (tc.verdict == "OVERSOLD") {
			t.Errorf("skew %s: %d overlaps drawn for a %s race", tc.lock, tl.Overlaps, res.Verdict)
		}
		t.Logf("skew %s: %s, sold %d of %d, %d overlaps; codes %v armed %v, %.0fms, p50 %.0fms max %.0fms", tc.lock, res.Verdict, res.Sold, res.Initial, tl.Overlaps, res.Codes, res.Armed, res.DurationMs, res.P50Ms, res.MaxMs)
	}
	// A small race skews a third of its requests too, not every one
	// (clocks that all run ahead agree again).
	code, evs := readEvents(t, "POST", srv.URL+"/race?lock=lua&endpoint=sale&scenario=skew&n=60&c=10")
	if code != 200 {
		t.Fatalf("skew n=60: %d %v", code, evs)
	}
	if res := result(t, evs); res.Timeline == nil {
		t.Error("skew n=60: no timeline")
	} else {
		checkSkewDrawn(t, "skew n=60", res.Timeline.Faults, 20, res.Armed)
	}
}

// checkSkewDrawn checks a skew race's drawn faults: every third request
// of the window carries skew=2s, and the timeline draws those that took
// the lock, never one that waited out its bound (503: its clock touched
// nothing). So all armed are drawn when none gave up, and under load no
// more than the armed.
func checkSkewDrawn(t *testing.T, what string, faults []race.Fault, armed int, outcomes map[string]int) {
	t.Helper()
	for _, f := range faults {
		if f.About != "skew=2s" || f.Code == 503 {
			t.Fatalf("%s: drew %+v; want skew=2s faults of requests that were not refused", what, f)
		}
	}
	switch gaveUp := outcomes["503"]; {
	case gaveUp == 0 && len(faults) != armed:
		t.Errorf("%s: %d skewed requests drawn, want every third of the window's (%d): none gave up", what, len(faults), armed)
	case len(faults) == 0 || len(faults) > armed:
		t.Errorf("%s: %d skewed requests drawn (%d armed gave up); want 1 to %d", what, len(faults), gaveUp, armed)
	}
}

// What the matrix skips, and what the running stack cannot stage, is a
// 400 that says why, before any load; so is a scenario with no fault key
// to arm its faults with.
func TestRaceScenarioRefusals(t *testing.T) {
	th, srv := newTheatre(t, "k3y")
	for q, want := range map[string]string{
		"lock=none&endpoint=sale&scenario=slow":              "not_in_matrix unsafe with no fault at all",
		"lock=local&endpoint=sale&scenario=single":           "cannot_stage 1 instance(s); this stack runs 3",
		"lock=redlock&endpoint=sale&scenario=majority-crash": "cannot_stage redis-server masters",
		"lock=lua&endpoint=sale&scenario=nope":               "bad_request unknown scenario",
		"lock=lua&endpoint=sale&scenario=slow&wait=fixed":    "bad_request the scenario says how its requests wait",
	} {
		code, evs := readEvents(t, "POST", srv.URL+"/race?"+q)
		reason, _ := evs[0].data["reason"].(string)
		msg, _ := evs[0].data["error"].(string)
		r, says, _ := strings.Cut(want, " ")
		if code != http.StatusBadRequest || reason != r || !strings.Contains(msg, says) {
			t.Errorf("%s: %d %v, want 400 %s saying %q", q, code, evs[0].data, r, says)
		}
	}
	th.key = ""
	code, evs := readEvents(t, "POST", srv.URL+"/race?lock=setnx&endpoint=sale&scenario=crash")
	if msg, _ := evs[0].data["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "fault key") {
		t.Errorf("a scenario without a fault key: %d %v, want 400", code, evs[0].data)
	}
}

// GET /race is the plan: the scenarios, and the ladder of flaws, each
// pair with the ladder's verdict and, where this stack cannot race it,
// why.
func TestRacePlan(t *testing.T) {
	_, srv := newTheatre(t, "k3y")
	resp, err := http.Get(srv.URL + "/race")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p race.Plan
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /race: %s, %v", resp.Status, err)
	}
	if len(p.Scenarios) < 10 || p.Scenarios[0].Name != "normal" || p.Scenarios[0].Expect["none"] != "OVERSOLD" {
		t.Errorf("scenarios: %+v", p.Scenarios)
	}
	cells := map[string]race.Cell{}
	for _, c := range p.Ladder {
		cells[c.Scenario+" "+c.Lock] = c
	}
	for pair, want := range map[string]string{
		"crash setnx":             "DEADLOCK ",
		"check-pause check-del":   "OVERSOLD ",
		"pause fenced":            "SAFE ",
		"skew getset":             "OVERSOLD ",
		"pause-session zookeeper": "OVERSOLD server_missing",
	} {
		c := cells[pair]
		if got := c.Expected + " " + c.Reason; got != want || (c.Reason == "") != (c.Skip == "") {
			t.Errorf("%s: %+v, want %q", pair, c, want)
		}
	}
	if len(p.Ladder) < 20 {
		t.Errorf("%d pairs in the ladder", len(p.Ladder))
	}
}
