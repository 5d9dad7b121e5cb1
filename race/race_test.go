package race_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/lock/speed/notify"
	"github.com/lockladder/lockladder/race"
)

// raceEnv is an app instance behind a real HTTP server, which the race
// service takes for its load balancer, and the service behind another.
func raceEnv(t *testing.T) (*redis.Client, *httptest.Server) {
	t.Helper()
	rdb, _, races := raceEnvApp(t)
	return rdb, races
}

// raceEnvApp is raceEnv with the app's server too.
func raceEnvApp(t *testing.T) (*redis.Client, *httptest.Server, *httptest.Server) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	n := notify.New(rdb, notify.Options{})
	t.Cleanup(func() { n.Close() })
	app := httptest.NewServer(handlers.New(handlers.Config{
		Instance:  "test-1",
		Inventory: inventory.New(rdb),
		Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second, Wait: 50 * time.Millisecond,
			Retry: lock.FixedSleep(5 * time.Millisecond), Notifier: n}, lock.RedlockOptions{}),
		MaxStock: 1000,
		Redis:    rdb, // the run guard
		RunKey:   runKey,
	}))
	t.Cleanup(app.Close)
	svc := race.New(app.URL, stage{app.URL})
	svc.Key = runKey
	races := httptest.NewServer(svc)
	t.Cleanup(races.Close)
	return rdb, app, races
}

// runKey is the run guard's key of raceEnvApp's app.
const runKey = "the-stacks-redis-password"

// stage is the one instance behind the race's load balancer.
type stage []string

func (s stage) InstanceURLs() []string { return s }

type event struct {
	name string
	data map[string]any
}

// readEvents starts a race and reads its Server-Sent Events to the end.
func readEvents(t *testing.T, method, url string) (int, []event) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, []event{{"error", body}}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var (
		evs []event
		cur event
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur = event{name: strings.TrimPrefix(line, "event: ")}
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event %s: %v", cur.name, err)
			}
			evs = append(evs, cur)
		}
	}
	return resp.StatusCode, evs
}

// TestRaceStreamsProgressAndVerdict: a race of none loses updates, a race
// of lua is SAFE; the progress events count up to the total; the result
// is the bench's row, judged from the counters read back.
func TestRaceStreamsProgressAndVerdict(t *testing.T) {
	_, srv := raceEnv(t)
	for _, c := range []struct{ lock, verdict string }{{"none", "LOST UPDATES"}, {"lua", "SAFE"}} {
		code, evs := readEvents(t, "POST", srv.URL+"/race?lock="+c.lock+"&endpoint=testLock&n=1500&c=50")
		if code != 200 || len(evs) == 0 {
			t.Fatalf("race %s: %d %v", c.lock, code, evs)
		}
		last := evs[len(evs)-1]
		if last.name != "result" {
			t.Fatalf("race %s ended with %s %v, want result", c.lock, last.name, last.data)
		}
		if v := last.data["verdict"]; v != c.verdict {
			t.Errorf("race %s: verdict %v, want %s (%v)", c.lock, v, c.verdict, last.data)
		}
		// (lua's requests wait 50ms here: some answer 503)
		if last.data["requests"] != 1500.0 || last.data["ok"].(float64) < 1 {
			t.Errorf("race %s: %v requests, %v ok, want 1500 and some 200s", c.lock, last.data["requests"], last.data["ok"])
		}
		prev := -1.0
		for _, e := range evs[:len(evs)-1] {
			done, _ := e.data["done"].(float64)
			if e.name != "progress" || done < prev || done > 1500 || e.data["total"] != 1500.0 {
				t.Errorf("race %s: event %s %v after %v done", c.lock, e.name, e.data, prev)
			}
			prev = done
		}
	}
}

// TestRaceRefusesBadInputAndASecondRace: out-of-range or unknown input is
// a 400 that changes nothing, as is a PUT (a race starts by POST), and a
// browser's request from another site is a 403; a race while another
// runs is a 409 run_in_progress naming it, and so are a bench's run and
// anyone's /reset; the guard is free again once the race has ended.
func TestRaceRefusesBadInputAndASecondRace(t *testing.T) {
	rdb, app, srv := raceEnvApp(t)
	ctx := context.Background()
	rdb.Set(ctx, inventory.KeyStock, 7, 0)
	for _, q := range []string{
		"lock=none&endpoint=testLock&n=0", "lock=none&endpoint=testLock&n=5001", "lock=none&endpoint=testLock&c=201",
		"lock=none&endpoint=testLock&c=x", "lock=none&endpoint=buy", "lock=nope&endpoint=sale", "endpoint=sale",
		"lock=none&endpoint=sale&speed=9", "lock=lua&endpoint=sale&wait=relay", "lock=none&endpoint=sale&n=5&n=6",
		"lock=none&endpoint=sale&n=%zz",
	} {
		code, evs := readEvents(t, "POST", srv.URL+"/race?"+q)
		if code != http.StatusBadRequest || evs[0].data["error"] == nil {
			t.Errorf("POST /race?%s: %d %v, want a 400 that says why", q, code, evs)
		}
	}
	if code, evs := readEvents(t, "PUT", srv.URL+"/race?lock=none&endpoint=sale"); code != http.StatusMethodNotAllowed {
		t.Errorf("PUT /race: %d %v, want 405", code, evs)
	}
	for _, tc := range []struct {
		host, header, value string
		want                int
	}{
		{"", "Sec-Fetch-Site", "cross-site", http.StatusForbidden},
		{"", "Sec-Fetch-Site", "same-site", http.StatusForbidden},
		{"", "Origin", "http://evil.example", http.StatusForbidden},
		// DNS rebinding: the attacker's name resolves here, and its page
		// is same-origin to the browser; only the Host tells.
		{"evil.example:8080", "Origin", "http://evil.example:8080", http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/race?lock=none&endpoint=sale&n=10", nil)
		req.Header.Set(tc.header, tc.value)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("POST /race (Host %q, %s: %s): %s, want %d", tc.host, tc.header, tc.value, resp.Status, tc.want)
		}
	}
	if v, _ := rdb.Get(ctx, inventory.KeyStock).Result(); v != "7" {
		t.Errorf("stock %q after refused races, want 7 (nothing reset)", v)
	}

	// A second race while the first runs: the first holds the stack
	// from its answer's header on.
	resp, err := http.Post(srv.URL+"/race?lock=lua&endpoint=sale&n=3000&c=20", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the first race: %s", resp.Status)
	}
	code, evs := readEvents(t, "POST", srv.URL+"/race?lock=lua&endpoint=sale&n=10")
	if code != http.StatusConflict || evs[0].data["reason"] != "run_in_progress" ||
		evs[0].data["owner"] != "race of lua on sale" || evs[0].data["since"] == nil {
		t.Errorf("a race while another runs: %d %v, want 409 run_in_progress naming the race and since when", code, evs)
	}
	if reset, err := http.Post(app.URL+"/reset?stock=5", "", nil); err != nil {
		t.Fatal(err)
	} else if reset.Body.Close(); reset.StatusCode != http.StatusConflict {
		t.Errorf("POST /reset while a race runs: %s, want 409", reset.Status)
	}
	// The owner's bench does not wait for a page's race: it takes the
	// stack from it at once, and the race ends saying so.
	row, err := bench.RunOne(ctx, bench.Config{URL: app.URL, Requests: 10, Concurrency: 1, Stock: 10, RunKey: runKey}, "lua", "sale")
	if err != nil || row.Verdict != bench.VerdictSafe || row.Sold != 10 {
		t.Errorf("a bench while a race runs: %v, %s, %d sold (%v); want it run at once, SAFE, 10 sold", err, row.Verdict, row.Sold, row.Codes)
	}
	rest, _ := io.ReadAll(resp.Body) // to the race's end
	resp.Body.Close()
	if !strings.Contains(string(rest), "event: failed") || !strings.Contains(string(rest), "bench") {
		t.Errorf("the race the bench took the stack from ended with %q, want a failed event naming the bench", tail(string(rest), 400))
	}

	// The page starts its next race as soon as it reads a result, before
	// the stream ends: the stack is free by then.
	for i := range 5 {
		resp, err := http.Post(srv.URL+"/race?lock=lua&endpoint=sale&n=10", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && sc.Text() != "event: result" {
		}
		held := rdb.Exists(ctx, guard.Key).Val()
		resp.Body.Close()
		if resp.StatusCode != 200 || sc.Err() != nil || held != 0 {
			t.Fatalf("race %d of 5 back to back: %s, %v; guard held when its result came: %v", i+1, resp.Status, sc.Err(), held == 1)
		}
	}
}

// TestRaceResultCarriesTheTimeline: a race's result carries the critical
// sections the instance held, on a lane of its own, and the overlaps
// among them: none's sections overlap (each a pair with the holder it
// overlapped, both flagged), lua's never do.
func TestRaceResultCarriesTheTimeline(t *testing.T) {
	_, srv := raceEnv(t)
	for _, c := range []struct {
		lock     string
		overlaps bool
	}{{"none", true}, {"lua", false}} {
		code, evs := readEvents(t, "POST", srv.URL+"/race?lock="+c.lock+"&endpoint=testLock&n=600&c=30")
		if code != 200 || len(evs) == 0 || evs[len(evs)-1].name != "result" {
			t.Fatalf("race %s: %d %v", c.lock, code, evs)
		}
		b, _ := json.Marshal(evs[len(evs)-1].data)
		var res race.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		tl := res.Timeline
		if tl == nil {
			t.Fatalf("race %s: no timeline in %s", c.lock, b)
		}
		if len(tl.Instances) != 1 || tl.Instances[0] != "test-1" {
			t.Errorf("race %s: lanes %v, want [test-1]", c.lock, tl.Instances)
		}
		// Every request that held the lock is a section (none "holds"
		// its no-lock too); lua's wait of 50ms turns some away.
		if len(tl.Sections) != res.Sections || len(tl.Sections) < res.OK || !tl.Complete || tl.Omitted != 0 {
			t.Errorf("race %s: %d sections on the timeline, the row says %d, %d ok, complete %v, omitted %d",
				c.lock, len(tl.Sections), res.Sections, res.OK, tl.Complete, tl.Omitted)
		}
		for i, s := range tl.Sections {
			if s[0] != 0 || s[2] < s[1] || s[1] < -1e6 || s[2] > tl.EndUs || i > 0 && s[1] < tl.Sections[i-1][1] {
				t.Fatalf("race %s: section %d %v out of place (end %dus)", c.lock, i, s, tl.EndUs)
			}
		}
		if tl.Overlaps != res.Overlaps || len(tl.Pairs) != res.Overlaps {
			t.Errorf("race %s: timeline overlaps %d, %d pairs; the row counts %d", c.lock, tl.Overlaps, len(tl.Pairs), res.Overlaps)
		}
		if got := tl.Overlaps > 0; got != c.overlaps {
			t.Errorf("race %s: %d overlaps, want some: %v", c.lock, tl.Overlaps, c.overlaps)
		}
		// The timeline is in whole microseconds, the overlaps are found
		// in nanoseconds: one shorter than a microsecond shows as a
		// section beginning the microsecond the other ends.
		for _, p := range tl.Pairs {
			a, b := tl.Sections[p[0]], tl.Sections[p[1]]
			if a[4]&race.FlagOverlap == 0 || b[4]&race.FlagOverlap == 0 || a[4]&race.FlagWrote == 0 || b[4]&race.FlagWrote == 0 ||
				!(a[1] <= b[2] && b[1] <= a[1]) {
				t.Fatalf("race %s: pair %v: %v and %v do not overlap as written", c.lock, p, a, b)
			}
		}
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
