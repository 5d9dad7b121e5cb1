package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

func TestSaleAndTestLockEveryRung(t *testing.T) {
	// redlock needs masters: see its own test below.
	for _, name := range []string{"none", "local", "setnx", "setnx-expire", "setnx-px", "check-del", "lua", "del-setnx", "getset", "reentrant", "fenced", "fair", "cohort", "cohort-carry", "atomic"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if code, _, _ := e.do(t, "POST", "/reset?stock=2"); code != 200 {
				t.Fatalf("reset: %d", code)
			}
			for i, want := range []struct {
				code      int
				remaining float64
			}{{200, 1}, {200, 0}, {409, 0}} {
				code, h, body := e.do(t, "POST", "/sale?lock="+name)
				if code != want.code || body["remaining"] != want.remaining || body["lock"] != name {
					t.Fatalf("sale %d: %d %v, want %d remaining %v", i, code, body, want.code, want.remaining)
				}
				if h.Get("X-Instance") != "test-1" || body["instance"] != "test-1" {
					t.Fatalf("sale %d: instance header %q body %v", i, h.Get("X-Instance"), body["instance"])
				}
				if sold := body["sold"]; sold != (code == 200) {
					t.Fatalf("sale %d: sold=%v with status %d", i, sold, code)
				}
				// An answer from inside a lock says how long it waited for
				// it; none and atomic take no lock and say nothing.
				w, has := h.Get("X-Lock-Wait"), h.Get("X-Lock-Wait") != ""
				if name == "none" || name == "atomic" {
					if has {
						t.Fatalf("sale %d: X-Lock-Wait %q from a lock that takes no lock", i, w)
					}
				} else if ms, err := strconv.ParseFloat(w, 64); err != nil || ms < 0 || ms > 5000 {
					t.Fatalf("sale %d: X-Lock-Wait %q, want the ms it waited", i, w)
				}
			}
			for i := 1; i <= 3; i++ {
				code, _, body := e.do(t, "GET", "/testLock?lock="+name)
				if code != 200 || body["num"] != float64(i) {
					t.Fatalf("testLock %d: %d %v", i, code, body)
				}
			}
			_, _, body := e.do(t, "GET", "/stock")
			if body["stock"] != 0.0 || body["sold"] != 2.0 || body["num"] != 3.0 {
				t.Fatalf("stock after run: %v", body)
			}
			for _, k := range e.mr.Keys() {
				if k == inventory.StockLock || k == inventory.NumLock {
					t.Fatalf("lock key %s left behind: keys %v", k, e.mr.Keys())
				}
			}
		})
	}
}

func TestResetClearsLocks(t *testing.T) {
	e := newEnv(t)
	e.mr.Set(inventory.StockLock, "stale")
	e.mr.Set(inventory.NumLock, "stale")
	e.mr.Set("unrelated", "x")
	if code, _, body := e.do(t, "POST", "/reset?stock=7"); code != 200 || body["stock"] != 7.0 {
		t.Fatalf("reset: %d %v", code, body)
	}
	if e.mr.Exists(inventory.StockLock) || e.mr.Exists(inventory.NumLock) || !e.mr.Exists("unrelated") {
		t.Fatalf("keys after reset: %v", e.mr.Keys())
	}
}

func TestLockHeldElsewhereGives503(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	e.mr.Set(inventory.StockLock, "another-holder")
	e.mr.SetTTL(inventory.StockLock, time.Minute)
	code, _, body := e.do(t, "POST", "/sale?lock=lua")
	if code != 503 || !strings.Contains(body["error"].(string), "not obtained") || body["reason"] != "lock_timeout" {
		t.Fatalf("got %d %v, want 503 lock not obtained, reason lock_timeout", code, body)
	}
	if got, _ := e.mr.Get(inventory.KeyStock); got != "5" {
		t.Fatalf("stock changed to %s by a refused sale", got)
	}
}

func TestRedisDownGives503(t *testing.T) {
	e := newEnv(t)
	e.mr.Close()
	for _, target := range []string{"/sale?lock=lua", "/sale?lock=atomic", "/testLock?lock=none", "/stock", "/healthz"} {
		code, _, body := e.do(t, "GET", target)
		if code != 503 || body["error"] == nil {
			t.Errorf("%s with Redis down: %d %v, want 503 with an error", target, code, body)
		}
		// lua fails to take its lock (nothing can have been written);
		// the others fail in their write, which may have reached Redis:
		// the reason tells the client which.
		want := map[string][]string{
			"/sale?lock=lua":      {"lock_timeout", "lock_unavailable"}, // the dial outlasts the wait, or not
			"/sale?lock=atomic":   {"unavailable"},
			"/testLock?lock=none": {"unavailable"},
			"/stock":              {"unavailable"},
			"/healthz":            {"unavailable"},
		}[target]
		if got, _ := body["reason"].(string); (got != "" || len(want) > 0) && !slices.Contains(want, got) {
			t.Errorf("%s with Redis down: reason %v, want %q", target, body["reason"], want)
		}
	}
}

// TestBadInputChangesNothing: every malformed request gets a 4xx JSON error
// naming the problem, and Redis is left exactly as it was.
func TestBadInputChangesNothing(t *testing.T) {
	cases := []struct {
		method, target string
		code           int
		mentions       string
	}{
		{"GET", "/sale", 400, "missing lock"},
		{"GET", "/sale?lock=", 400, "missing lock"},
		{"GET", "/sale?lock=nope", 400, `unknown lock "nope"`},
		{"GET", "/sale?lock=LUA", 400, "unknown lock"},
		{"GET", "/sale?lock=lua%00", 400, "unknown lock"},
		{"GET", "/sale?lock=" + strings.Repeat("x", 5000), 400, "..."},
		{"GET", "/sale?lock=lua&lock=none", 400, "given 2 times"},
		{"GET", "/sale?lock=lua&extra=1", 400, `unknown parameter "extra"`},
		{"POST", "/testLock?lock=%F0%9F%94%92", 400, "unknown lock"},
		{"GET", "/testLock?lock=lua&stock=5", 400, "unknown parameter"},
		{"GET", "/sale?lock=lua&wait=spin", 400, `wait: unknown wait mode "spin"`},
		{"GET", "/sale?lock=lua&wait=", 400, "wait: unknown wait mode"},
		{"GET", "/sale?lock=lua&wait=notify&wait=fixed", 400, "given 2 times"},
		{"POST", "/reset", 400, "stock: empty"},
		{"POST", "/reset?stock=", 400, "stock: empty"},
		{"POST", "/reset?stock=-1", 400, `stock: "-1" is not a whole number`},
		{"POST", "/reset?stock=-0", 400, `stock: "-0" is not a whole number`},
		{"POST", "/reset?stock=+1", 400, `stock: " 1" is not a whole number`}, // a query's + is a space
		{"POST", "/reset?stock=%2B1", 400, `stock: "+1" is not a whole number`},
		{"POST", "/reset?stock=" + strings.Repeat("0", 30) + "1", 400, "stock: \"000"},
		{"POST", "/reset?stock=5&skus=%2B1", 400, `skus: "+1" is not a whole number`},
		{"POST", "/reset?stock=5&skus=01", 400, `skus: "01" is not a whole number`},
		{"GET", "/sale?lock=lua&try=-0", 400, `try: "-0" is not a duration`},
		{"GET", "/testLock?lock=lua&try=%2B1s", 400, `try: "+1s" is not a duration`},
		{"GET", "/sections?since=-0", 400, `since: "-0" is not a whole number`},
		{"GET", "/sections?limit=%2B5", 400, `limit: "+5" is not a whole number`},
		{"POST", "/reset?stock=1.5", 400, "not a whole number"},
		{"POST", "/reset?stock=abc", 400, "not a whole number"},
		{"POST", "/reset?stock=1001", 400, "out of range"},
		{"POST", "/reset?stock=99999999999999999999999", 400, "out of range"},
		{"POST", "/reset?stock=5&lock=lua", 400, "unknown parameter"},
		{"GET", "/stock?x=1", 400, "unknown parameter"},
		{"GET", "/reset?stock=5", 405, "not allowed"},
		{"DELETE", "/sale?lock=lua", 405, "not allowed"},
		{"PUT", "/testLock?lock=lua", 405, "not allowed"},
		{"POST", "/stock", 405, "not allowed"},
		{"GET", "/nowhere", 404, "no such endpoint"},
	}
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=10")
	e.do(t, "POST", "/sale?lock=lua")
	before := e.mr.Dump()
	for _, tc := range cases {
		t.Run(tc.method+" "+truncate(tc.target), func(t *testing.T) {
			code, h, body := e.do(t, tc.method, tc.target)
			if code != tc.code {
				t.Fatalf("status %d, want %d (%v)", code, tc.code, body)
			}
			msg, _ := body["error"].(string)
			if !strings.Contains(msg, tc.mentions) {
				t.Fatalf("error %q does not mention %q", msg, tc.mentions)
			}
			if code == 400 {
				if locks, _ := body["locks"].([]any); len(locks) != len(e.ladder.Names()) {
					t.Fatalf("400 does not list the valid locks: %v", body)
				}
			}
			if reason, _ := body["reason"].(string); reason == "" {
				t.Errorf("no reason: %v", body)
			}
			// A number's 400 names its parameter.
			if p, _, ok := strings.Cut(tc.mentions, ": "); ok && slices.Contains([]string{"stock", "skus", "try", "since", "limit"}, p) && body["param"] != p {
				t.Errorf("param %v, want %q: %v", body["param"], p, body)
			}
			if code == 405 && h.Get("Allow") == "" {
				t.Fatal("405 without an Allow header")
			}
			if after := e.mr.Dump(); after != before {
				t.Fatalf("Redis changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestStrategiesAndPage(t *testing.T) {
	e := newEnv(t)
	w := httptest.NewRecorder()
	e.router.ServeHTTP(w, httptest.NewRequest("GET", "/strategies", nil))
	var rungs []lock.Info
	if err := json.Unmarshal(w.Body.Bytes(), &rungs); err != nil || len(rungs) != len(e.ladder.Names()) {
		t.Fatalf("strategies: %v %s", err, w.Body)
	}
	get := func(path string) (int, string, string) {
		w := httptest.NewRecorder()
		e.router.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w.Code, w.Header().Get("Content-Type"), w.Body.String()
	}
	// the lab: every rung's buttons
	code, ct, page := get("/lab")
	if code != 200 || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("GET /lab: %d %s", code, ct)
	}
	for _, want := range []string{"test-1", "/sale?lock=lua", "/testLock?lock=atomic", "/reset?stock="} {
		if !strings.Contains(page, want) {
			t.Errorf("the lab lacks %q", want)
		}
	}
	// the course: its welcome, a step, a step that is not, the icon
	if code, ct, page := get("/"); code != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(page, `href="/learn/none"`) {
		t.Errorf("GET /: %d %s, want the welcome starting step 1", code, ct)
	}
	if code, _, page := get("/learn/lua"); code != 200 || !strings.Contains(page, "luaRelease.Run") {
		t.Errorf("GET /learn/lua: %d, want the step with its code", code)
	}
	if code, ct, body := get("/learn/no-such-rung"); code != 404 || !strings.HasPrefix(ct, "application/json") || !strings.Contains(body, "no such step") {
		t.Errorf("GET /learn/no-such-rung: %d %s %s, want a 404 saying so", code, ct, body)
	}
	if code, ct, _ := get("/favicon.ico"); code != 200 || ct != "image/svg+xml" {
		t.Errorf("GET /favicon.ico: %d %s", code, ct)
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	if code, _, body := e.do(t, "GET", "/healthz"); code != 200 || body["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, body)
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

func TestRedlockWithoutMastersSaysSo(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	code, _, body := e.do(t, "POST", "/sale?lock=redlock")
	if code != 503 || !strings.Contains(body["error"].(string), "-masters") {
		t.Fatalf("got %d %v, want 503 naming -masters", code, body)
	}
}

func TestFaultParametersRefusedUnlessEnabled(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	before := e.mr.Dump()
	for _, q := range []string{"work=300ms", "fault=crash", "fault=pause&pause=1s", "pause=1s", "skew=2s"} {
		code, _, body := e.do(t, "POST", "/sale?lock=lua&"+q)
		if code != 400 || !strings.Contains(body["error"].(string), "-faults") {
			t.Errorf("%s: %d %v, want 400 naming -faults", q, code, body)
		}
	}
	if e.mr.Dump() != before {
		t.Fatal("a refused fault request changed Redis")
	}
}

// With a fault key (the stack's), only a request that carries it arms a
// fault: one without it, or with another, is a 400 that changes nothing,
// as on an instance with no faults at all.
func TestFaultKeyGuardsTheFaults(t *testing.T) {
	var sleeps []string
	e := newEnvConfig(t, func(c *handlers.Config) {
		c.Faults = &handlers.FaultActions{Sleep: func(d time.Duration) { sleeps = append(sleeps, d.String()) }}
		c.FaultKey = "s3cret"
	})
	e.do(t, "POST", "/reset?stock=5")
	before := e.mr.Dump()
	for _, key := range []string{"", "wrong", "s3cret2", "s3cre"} {
		r := httptest.NewRequest("POST", "/sale?lock=lua&work=7ms", nil)
		if key != "" {
			r.Header.Set(contract.HeaderFaultKey, key)
		}
		w := httptest.NewRecorder()
		e.router.ServeHTTP(w, r)
		if w.Code != 400 || !strings.Contains(w.Body.String(), "fault key") {
			t.Errorf("key %q: %d %s, want 400 saying a fault needs the key", key, w.Code, w.Body)
		}
	}
	if e.mr.Dump() != before || len(sleeps) > 0 {
		t.Fatalf("a refused fault request changed Redis or slept: %v", sleeps)
	}
	// Uncontended: its try= bounds the tries' round trips too, so a
	// short one can run out under -race on loaded cores.
	r := httptest.NewRequest("POST", "/sale?lock=lua&work=7ms&try=5s", nil)
	r.Header.Set(contract.HeaderFaultKey, "s3cret")
	w := httptest.NewRecorder()
	e.router.ServeHTTP(w, r)
	if w.Code != 200 || strings.Join(sleeps, ",") != "7ms" {
		t.Errorf("with the key: %d %s, slept %v: want the work armed", w.Code, w.Body, sleeps)
	}
	// Without fault parameters the key changes nothing.
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&try=5s"); code != 200 {
		t.Errorf("a plain sale: %d %v", code, body)
	}
}

func TestArmedFaultsStrikeAtTheirPoints(t *testing.T) {
	var exits, sleeps, stops []string
	e := newEnvWith(t, &handlers.FaultActions{
		Exit:  func(code int) { exits = append(exits, strconv.Itoa(code)) },
		Sleep: func(d time.Duration) { sleeps = append(sleeps, d.String()) },
		Stop:  func(d time.Duration) { stops = append(stops, d.String()) },
	})
	e.do(t, "POST", "/reset?stock=5")
	for _, tc := range []struct {
		target string
		code   int
	}{
		{"/sale?lock=lua&fault=crash", 200},                        // exits after acquiring (faked: goes on)
		{"/sale?lock=setnx-expire&fault=crash-before-expire", 200}, // exits between SETNX and EXPIRE
		{"/sale?lock=lua&fault=crash-before-expire", 200},          // lua has no such point: nothing
		{"/sale?lock=lua&work=7ms", 200},
		{"/testLock?lock=check-del&fault=check-pause&pause=20ms", 200},
		{"/sale?lock=reentrant&fault=pause&pause=30ms", 200},
		{"/sale?lock=lua&work=0s", 400},
		{"/sale?lock=lua&fault=melt", 400},
		{"/sale?lock=lua&fault=pause", 400},
	} {
		if code, _, body := e.do(t, "POST", tc.target); code != tc.code {
			t.Fatalf("%s: %d %v, want %d", tc.target, code, body, tc.code)
		}
	}
	if got := strings.Join(exits, ","); got != "3,3" {
		t.Errorf("exits %q, want two exits with status 3", got)
	}
	if got := strings.Join(sleeps, ","); got != "7ms,20ms" {
		t.Errorf("sleeps %q, want the work then the check-pause", got)
	}
	if got := strings.Join(stops, ","); got != "30ms" {
		t.Errorf("stops %q, want one process stop of 30ms", got)
	}
}

// skew= runs the request's lock clock ahead: on getset, a request
// skewed past the lease judges a live lock expired and takes it (the
// lock's value is an expiry timestamp); without it, or on lua (a lease
// Redis keeps), the lock stays busy.
func TestSkewRunsTheRequestsClockAhead(t *testing.T) {
	e := newEnvWith(t, &handlers.FaultActions{})
	e.do(t, "POST", "/reset?stock=5")
	live := strconv.FormatInt(time.Now().Add(time.Second).UnixMilli(), 10)
	for _, tc := range []struct {
		target string
		code   int
	}{
		{"/sale?lock=getset&try=0s", 503},
		{"/sale?lock=getset&try=0s&skew=500ms", 503},
		{"/sale?lock=getset&try=0s&skew=2s", 200},
		{"/sale?lock=lua&try=0s&skew=2s", 503},
		{"/sale?lock=getset&try=0s&skew=11s", 400},
	} {
		e.mr.Set(inventory.StockLock, live)
		if strings.Contains(tc.target, "lua") {
			e.mr.SetTTL(inventory.StockLock, time.Second)
		}
		if code, _, body := e.do(t, "POST", tc.target); code != tc.code {
			t.Errorf("%s on a live lock: %d %v, want %d", tc.target, code, body, tc.code)
		}
		e.mr.Del(inventory.StockLock)
	}
}

// TestReenter: the articles' testReEnter. A reentrant lock (reentrant, and
// local as Java's synchronized) lets its owner in again; any other lock
// would hold the lock waiting for itself until its bound, so reenter=1 on
// it is a 400 that names the locks that re-enter, and takes no lock.
func TestReenter(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	if code, _, body := e.do(t, "POST", "/sale?lock=reentrant&reenter=1"); code != 200 || body["remaining"] != 4.0 {
		t.Fatalf("reentrant re-entered: %d %v", code, body)
	}
	if e.mr.Exists(inventory.StockLock) {
		t.Fatal("reentrant lock left held after both releases")
	}
	if code, _, body := e.do(t, "POST", "/sale?lock=local&reenter=1"); code != 200 || body["remaining"] != 3.0 {
		t.Fatalf("local re-entered: %d %v", code, body)
	}
	if code, _, body := e.do(t, "POST", "/sale?lock=local"); code != 200 || body["remaining"] != 2.0 {
		t.Fatalf("local after a re-entry: %d %v: the monitor was left held", code, body)
	}
	before := e.mr.Dump()
	// A request that waited for its own lock would end in a 503
	// lock_timeout after its try=5s, not in this 400: the answer, not a
	// clock, says it was refused before any lock was taken.
	for _, name := range []string{"lua", "setnx", "setnx-px", "fenced", "fair", "cohort", "atomic", "none"} {
		code, _, body := e.do(t, "POST", "/sale?lock="+name+"&reenter=1&try=5s")
		msg, _ := body["error"].(string)
		if code != 400 || !strings.Contains(msg, "cannot re-enter") || !strings.Contains(msg, "local, reentrant") {
			t.Errorf("%s with reenter=1: %d %v, want 400 naming local and reentrant", name, code, body)
		}
	}
	if e.mr.Dump() != before {
		t.Fatal("a refused reenter=1 changed Redis (took a lock, sold)")
	}
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&reenter=0"); code != 200 || body["remaining"] != 1.0 {
		t.Fatalf("reenter=0 on lua: %d %v", code, body)
	}
	if code, _, _ := e.do(t, "POST", "/sale?lock=lua&reenter=maybe"); code != 400 {
		t.Fatalf("reenter=maybe: %d, want 400", code)
	}
}

// TestFencedRefusesStaleToken: a holder whose token is below the highest
// seen gets a 409 and changes nothing; its critical section is recorded
// as refused (the timeline marks it), the one that sold is not.
func TestFencedRefusesStaleToken(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	since := time.Now().UnixNano()
	// Uncontended, each takes its lock at once; try=5s bounds the tries'
	// round trips too (a 50ms bound once ran out under -race beside the
	// other packages).
	if code, _, body := e.do(t, "POST", "/sale?lock=fenced&try=5s"); code != 200 {
		t.Fatalf("first fenced sale failed: %d %v", code, body)
	}
	e.mr.Set(inventory.StockFence, "1000000") // someone with a far higher token has been here
	code, _, body := e.do(t, "POST", "/sale?lock=fenced&try=5s")
	if code != 409 || !strings.Contains(body["error"].(string), "stale") || body["reason"] != "stale_token" {
		t.Fatalf("got %d %v, want 409 stale token, reason stale_token", code, body)
	}
	if got, _ := e.mr.Get(inventory.KeyStock); got != "4" {
		t.Fatalf("stock %s, want 4: the stale write must not land", got)
	}
	_, _, body = e.do(t, "GET", "/sections?since="+strconv.FormatInt(since, 10))
	var got []string
	for _, s := range body["sections"].([]any) {
		s := s.(map[string]any)
		got = append(got, fmt.Sprintf("wrote=%v refused=%v", s["wrote"], s["refused"]))
	}
	if want := []string{"wrote=true refused=<nil>", "wrote=false refused=true"}; !slices.Equal(got, want) {
		t.Errorf("sections %q, want %q", got, want)
	}
}

// TestWaitParameter: wait= picks how this request waits for a busy lock,
// whatever the instance's default; a request that waits by notify is woken
// by the release it waited for.
func TestWaitParameter(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=20")
	for _, m := range lock.WaitModes {
		for _, name := range []string{"lua", "fenced", "fair", "atomic"} {
			target := "/sale?lock=" + name + "&wait=" + string(m)
			rung, _, _ := ladder.New(ladder.Backends{}, lock.Options{}, lock.RedlockOptions{}).Lookup(name)
			code, _, body := e.do(t, "POST", target)
			if !slices.Contains(rung.Waits, m) {
				// A wait mode the lock does not take is bad input,
				// and says which it takes.
				if msg, _ := body["error"].(string); code != 400 || !strings.Contains(msg, "does not apply to lock") {
					t.Fatalf("%s: %d %v, want a 400 saying wait= does not apply", target, code, body)
				}
				continue
			}
			if code != 200 || body["sold"] != true {
				t.Fatalf("%s: %d %v", target, code, body)
			}
		}
	}
	// A held lock: wait=backoff still honours the instance's wait bound.
	// miniredis's clock stands still, so the holder never lets go: a wait
	// that ignored the bound would never answer (go test's -timeout ends
	// it, its stack showing the wait). No clock judges the answer.
	e.mr.Set(inventory.StockLock, "another-holder")
	e.mr.SetTTL(inventory.StockLock, time.Minute)
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&wait=backoff"); code != 503 || body["reason"] != "lock_timeout" {
		t.Fatalf("wait=backoff on a held lock: %d %v, want 503 lock_timeout", code, body)
	}
}

// TestSectionsRecordEachHold: every sale under a lock leaves one critical
// section (acquired before released, the fencing token when the lock has
// one, wrote only when the sale wrote); the atomic ceiling takes no lock and
// leaves none.
func TestSectionsRecordEachHold(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=1")
	since := time.Now().UnixNano()
	for _, target := range []string{"/sale?lock=lua", "/sale?lock=fenced", "/sale?lock=atomic", "/testLock?lock=lua"} {
		e.do(t, "POST", target)
	}
	code, _, body := e.do(t, "GET", "/sections?since="+strconv.FormatInt(since, 10))
	if code != 200 || body["complete"] != true || body["instance"] != "test-1" {
		t.Fatalf("GET /sections: %d %v", code, body)
	}
	if h, ok := body["holding"].([]any); !ok || len(h) != 0 {
		t.Fatalf("holding %v, want an empty list: every request is over", body["holding"])
	}
	secs := body["sections"].([]any)
	if len(secs) != 3 {
		t.Fatalf("want 3 sections (lua sale, fenced sale, lua increment), got %d: %v", len(secs), secs)
	}
	want := []struct {
		lock, key string
		wrote     bool
		token     bool
	}{
		{"lua", inventory.StockLock, true, false},
		{"fenced", inventory.StockLock, false, true}, // sold out: nothing written
		{"lua", inventory.NumLock, true, false},
	}
	for i, w := range want {
		s := secs[i].(map[string]any)
		acq, rel := s["acquired"].(float64), s["released"].(float64)
		_, hasToken := s["token"]
		if s["lock"] != w.lock || s["key"] != w.key || s["wrote"] != w.wrote || hasToken != w.token ||
			acq < float64(since) || rel < acq {
			t.Errorf("section %d = %v, want lock %s key %s wrote %v token %v, since <= acquired <= released",
				i, s, w.lock, w.key, w.wrote, w.token)
		}
	}
	if code, _, body := e.do(t, "GET", "/sections?since=soon"); code != 400 || body["error"] == nil {
		t.Fatalf("bad since: %d %v, want 400", code, body)
	}
}

// TestSectionsLimit: GET /sections answers at most limit= sections
// (default and most handlers.MaxSections), the earliest acquired first,
// and next= says where the rest begin; asked from there, page by page,
// every section comes once. A limit out of [1, MaxSections] is a 400.
func TestSectionsLimit(t *testing.T) {
	rec := contract.NewRecorder(1 << 16)
	e := newEnvConfig(t, func(c *handlers.Config) { c.Sections = rec })
	since := time.Now().UnixNano()
	const n = handlers.MaxSections + 2500
	for i := range int64(n) {
		rec.Add(contract.Section{Lock: "lua", Key: "k", Acquired: since + i, Released: since + i + 1, Token: i})
	}
	page := func(target string) (secs []contract.Section, next int64) {
		t.Helper()
		w := httptest.NewRecorder()
		e.router.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		var body struct { // int64s: Unix nanoseconds do not fit a float64
			Complete bool               `json:"complete"`
			Sections []contract.Section `json:"sections"`
			Next     int64              `json:"next"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); w.Code != 200 || err != nil || !body.Complete {
			t.Fatalf("GET %s: %d %v complete %v", target, w.Code, err, body.Complete)
		}
		return body.Sections, body.Next
	}
	secs, next := page("/sections?since=" + strconv.FormatInt(since, 10))
	if len(secs) != handlers.MaxSections || next != since+handlers.MaxSections {
		t.Fatalf("no limit: %d sections, next %d: want %d and since+%d", len(secs), next-since, handlers.MaxSections, handlers.MaxSections)
	}
	var got int64
	for from, pages := since, 0; ; pages++ {
		secs, next := page("/sections?limit=4000&since=" + strconv.FormatInt(from, 10))
		if len(secs) > 4000 || pages > 10 {
			t.Fatalf("a page of %d sections, page %d", len(secs), pages)
		}
		for _, s := range secs {
			if s.Token != got || s.Acquired != since+got {
				t.Fatalf("section %d (acquired since+%d) where %d was due", s.Token, s.Acquired-since, got)
			}
			got++
		}
		if next == 0 {
			break
		}
		from = next
	}
	if got != n {
		t.Fatalf("pages of 4000 gave %d sections, want %d", got, n)
	}

	for _, v := range []string{"0", "-1", "", "10001", "1e3", "all", "5&limit=5"} {
		if code, _, body := e.do(t, "GET", "/sections?limit="+v); code != 400 || body["error"] == nil {
			t.Errorf("limit=%s: %d %v, want 400", v, code, body)
		}
	}
}

// TestTryAndLease: try= bounds how long this request waits (try=0: one
// attempt, a 503 lock_busy at once when held); lease= sets the lease. Each
// is a 400 out of its bounds or on a lock it does not apply to, and changes
// nothing.
func TestTryAndLease(t *testing.T) {
	// The instance's wait bound is an hour and the lock's holder never
	// lets go (miniredis's clock stands still), so a try=0 that waited
	// would not answer at all: the test hangs until go test's -timeout
	// and its stack shows the wait. No clock judges the answer: a try=0
	// slowed by a loaded machine is still one attempt.
	e := newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) {
		c.Ladder = ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second, Wait: time.Hour,
			Retry: lock.FixedSleep(5 * time.Millisecond)}, lock.RedlockOptions{})
	})
	e.do(t, "POST", "/reset?stock=5")
	e.mr.Set(inventory.StockLock, "another-holder")
	e.mr.SetTTL(inventory.StockLock, time.Minute)
	code, _, body := e.do(t, "POST", "/sale?lock=lua&try=0")
	if code != 503 || body["reason"] != "lock_busy" {
		t.Fatalf("try=0 on a held lock: %d %v, want 503 lock_busy", code, body)
	}
	e.mr.Del(inventory.StockLock)
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&try=0"); code != 200 {
		t.Fatalf("try=0 on a free lock: %d %v", code, body)
	}
	// The most the scenarios ask (docs/scenarios.md) is within the bounds.
	if code, _, body := e.do(t, "POST", "/sale?lock=lua&try=5s&lease=5s"); code != 200 {
		t.Fatalf("try=5s&lease=5s: %d %v", code, body)
	}

	before := e.mr.Dump()
	for _, tc := range []struct{ target, want string }{
		{"/sale?lock=lua&try=-1s", "not a duration"},
		{"/sale?lock=lua&try=6s", "out of range [0s, 5s]"},
		{"/sale?lock=lua&try=10s", "out of range"},
		{"/sale?lock=lua&try=soon", "not a duration"},
		{"/sale?lock=lua&try=", "try: empty"},
		{"/sale?lock=lua&lease=50ms", "out of range"},
		{"/sale?lock=lua&lease=6s", "out of range [100ms, 5s]"},
		{"/sale?lock=lua&lease=61s", "out of range"},
		{"/sale?lock=lua&lease=0", "out of range"},
		{"/sale?lock=atomic&try=1s", `try= does not apply to lock "atomic"`},
		{"/sale?lock=none&try=0", `try= does not apply to lock "none"`},
		{"/sale?lock=setnx&lease=1s", `lease= does not apply to lock "setnx"`},
		{"/testLock?lock=local&lease=1s", `lease= does not apply to lock "local"`},
	} {
		code, _, body := e.do(t, "POST", tc.target)
		if msg, _ := body["error"].(string); code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %v, want 400 saying %q", tc.target, code, body, tc.want)
		}
	}
	if e.mr.Dump() != before {
		t.Fatal("a refused try= or lease= changed Redis")
	}
}
