package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// raceEnv is the router behind a real HTTP server that is also its own
// load balancer, with a race guard in its Redis.
func raceEnv(t *testing.T) (*env, *httptest.Server, lock.Locker) {
	t.Helper()
	var router http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { router.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	var guard lock.Locker
	e := newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) {
		guard = lock.NewLua(rdb, lock.Options{TTL: 10 * time.Second})
		c.LB, c.RaceLock = srv.URL, guard
	})
	router = e.router
	return e, srv, guard
}

type event struct {
	name string
	data map[string]any
}

// readEvents reads a race's Server-Sent Events to the end.
func readEvents(t *testing.T, url string) (int, []event) {
	t.Helper()
	resp, err := http.Get(url)
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
	_, srv, _ := raceEnv(t)
	for _, c := range []struct{ lock, verdict string }{{"none", "LOST UPDATES"}, {"lua", "SAFE"}} {
		code, evs := readEvents(t, srv.URL+"/race?lock="+c.lock+"&endpoint=testLock&n=1500&c=50")
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
// a 400 that changes nothing; a race while another holds the stack's
// guard is a 409; an instance without a load balancer cannot race.
func TestRaceRefusesBadInputAndASecondRace(t *testing.T) {
	e, srv, guard := raceEnv(t)
	ctx := context.Background()
	e.rdb.Set(ctx, inventory.KeyStock, 7, 0)
	for _, q := range []string{
		"lock=none&endpoint=testLock&n=0", "lock=none&endpoint=testLock&n=5001", "lock=none&endpoint=testLock&c=201",
		"lock=none&endpoint=testLock&c=x", "lock=none&endpoint=buy", "lock=nope&endpoint=sale", "endpoint=sale",
		"lock=none&endpoint=sale&speed=9", "lock=lua&endpoint=sale&wait=relay", "lock=none&endpoint=sale&n=5&n=6",
	} {
		code, evs := readEvents(t, srv.URL+"/race?"+q)
		if code != http.StatusBadRequest || evs[0].data["error"] == nil {
			t.Errorf("/race?%s: %d %v, want a 400 that says why", q, code, evs)
		}
	}
	if v, _ := e.rdb.Get(ctx, inventory.KeyStock).Result(); v != "7" {
		t.Errorf("stock %q after refused races, want 7 (nothing reset)", v)
	}

	held, err := guard.Obtain(ctx, handlers.RaceKey, lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	code, evs := readEvents(t, srv.URL+"/race?lock=lua&endpoint=sale&n=10")
	if code != http.StatusConflict || evs[0].data["reason"] != "race_running" {
		t.Errorf("a race while another runs: %d %v, want 409 race_running", code, evs)
	}
	held.Release(ctx)

	plain := newEnv(t)
	if code, _, body := plain.do(t, "GET", "/race?lock=lua&endpoint=sale"); code != http.StatusServiceUnavailable || body["reason"] != "race_unavailable" {
		t.Errorf("race without -lb: %d %v, want 503 race_unavailable", code, body)
	}
}
