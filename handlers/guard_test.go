package handlers_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
)

// testKey is the run key of guardEnv's app.
const testKey = "the-stacks-redis-password"

// doToken is env.do with the run guard's token in guard.Header ("":
// none), and the run key on /guard.
func doToken(t *testing.T, e *env, method, target, token string) (int, map[string]any) {
	t.Helper()
	key := ""
	if strings.HasPrefix(target, "/guard") {
		key = testKey
	}
	return doKey(t, e, method, target, token, key)
}

// doKey is doToken with the run key in guard.KeyHeader ("": none).
func doKey(t *testing.T, e *env, method, target, token, key string) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.Header.Set(guard.Header, token)
	}
	if key != "" {
		req.Header.Set(guard.KeyHeader, key)
	}
	e.router.ServeHTTP(w, req)
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s %s: %d, body not JSON: %q", method, target, w.Code, w.Body.String())
	}
	return w.Code, body
}

// guardEnv is an app with the run guard over its miniredis, and a key.
func guardEnv(t *testing.T, ttl time.Duration, maxItems int) *env {
	t.Helper()
	return newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) {
		c.Redis, c.GuardTTL, c.MaxItems, c.RunKey = rdb, ttl, maxItems, testKey
	})
}

// take takes the guard for run (a query: "run=bench") and returns its
// token and scope, checking the app named it want.
func take(t *testing.T, e *env, run, want string) (token, scope string) {
	t.Helper()
	code, body := doToken(t, e, "POST", "/guard?"+run, "")
	token, _ = body["token"].(string)
	scope, _ = body["scope"].(string)
	if code != 200 || len(token) != 32 || body["owner"] != want || body["ttl_ms"] == nil || body["since"] == nil || guard.CheckScope(scope) != nil {
		t.Fatalf("POST /guard?%s: %d %v, want 200 with a token, owner %q, since, scope and ttl_ms", run, code, body, want)
	}
	return token, scope
}

// since is the renewal's since= of a run that took the guard now.
func since() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }

// TestResetWhileARunHoldsTheGuard: while a run holds the guard, a /reset
// without its token is a 409 run_in_progress naming the run and since
// when, and changes nothing; so is one with another token; the run's own
// reset passes; a second run's take is refused the same way; renewing
// another's guard is a 409 guard_lost; once released, /reset passes.
func TestResetWhileARunHoldsTheGuard(t *testing.T) {
	e := guardEnv(t, 0, 0)
	mustDo(t, e, "POST", "/reset?stock=7", 200)
	mustDo(t, e, "POST", "/sale?lock=lua", 200)
	token, scope := take(t, e, "run=bench", "bench")
	before := e.mr.Dump()
	for _, req := range []struct{ target, token, reason string }{
		{"/reset?stock=5", "", guard.ReasonBusy},
		{"/reset?stock=5&sku=x", "", guard.ReasonBusy},
		{"/reset?stock=5&skus=3", "", guard.ReasonBusy},
		{"/reset?stock=5", "0123456789abcdef0123456789abcdef", guard.ReasonLost},
	} {
		code, body := doToken(t, e, "POST", req.target, req.token)
		msg, _ := body["error"].(string)
		if code != 409 || body["reason"] != req.reason || body["owner"] != "bench" || body["since"] == nil ||
			!strings.Contains(msg, "bench") {
			t.Errorf("POST %s (token %q) while bench holds the guard: %d %v, want 409 %s naming it", req.target, req.token, code, body, req.reason)
		}
	}
	if code, body := doToken(t, e, "POST", "/guard?run=race&lock=lua&endpoint=sale", ""); code != 409 || body["reason"] != guard.ReasonBusy || body["owner"] != "bench" {
		t.Errorf("a second take: %d %v, want 409 run_in_progress naming bench", code, body)
	}
	if code, body := doToken(t, e, "PUT", "/guard?run=race&scope="+scope+"&since="+since(), "not-the-token"); code != 409 || body["reason"] != guard.ReasonLost {
		t.Errorf("renewing with another token: %d %v, want 409 guard_lost", code, body)
	}
	if code, body := doToken(t, e, "DELETE", "/guard", "not-the-token"); code != 200 || body["released"] != false {
		t.Errorf("releasing with another token: %d %v, want 200 released false", code, body)
	}
	if after := e.mr.Dump(); after != before {
		t.Errorf("refused requests changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	if code, body := doToken(t, e, "GET", "/guard", ""); code != 200 || body["held"] != true || body["owner"] != "bench" || body["token"] != nil {
		t.Errorf("GET /guard: %d %v, want held by bench, no token shown", code, body)
	}

	if code, body := doToken(t, e, "POST", "/reset?stock=5", token); code != 200 || body["stock"] != 5.0 {
		t.Errorf("the run's own reset: %d %v, want 200", code, body)
	}
	if code, body := doToken(t, e, "PUT", "/guard?run=bench&scope="+scope+"&since="+since(), token); code != 200 || body["owner"] != "bench" {
		t.Errorf("the run's renewal: %d %v, want 200", code, body)
	}
	if code, body := doToken(t, e, "DELETE", "/guard", token); code != 200 || body["released"] != true {
		t.Errorf("the run's release: %d %v, want 200 released true", code, body)
	}
	if code, body := doToken(t, e, "GET", "/guard", ""); code != 200 || body["held"] != false {
		t.Errorf("GET /guard once released: %d %v, want held false", code, body)
	}
	mustDo(t, e, "POST", "/reset?stock=6", 200)
}

// TestGuardNeedsTheRunKey: nobody without the stack's run key takes,
// renews or releases the guard (the curl: a token and a name of
// the caller's choosing), and nobody names the holder: the app composes
// it from what runs, and makes the token.
func TestGuardNeedsTheRunKey(t *testing.T) {
	e := guardEnv(t, 0, 0)
	for _, key := range []string{"", "guessed", testKey[:len(testKey)-1]} {
		for _, req := range []struct{ method, target string }{
			{"POST", "/guard?run=bench"},
			{"PUT", "/guard?run=bench&since=" + since()},
			{"PUT", "/guard?owner=x"},
			{"DELETE", "/guard"},
		} {
			code, body := doKey(t, e, req.method, req.target, "mine", key)
			if code != 403 || body["reason"] != guard.ReasonNoKey {
				t.Errorf("%s %s with key %q: %d %v, want 403 %s", req.method, req.target, key, code, body, guard.ReasonNoKey)
			}
		}
	}
	if e.mr.Exists(guard.Key) {
		t.Fatal("a caller without the key took the guard")
	}
	// With the key: the holder is named from the run, never as asked.
	take(t, e, "run=race&lock=lua&endpoint=sale&scenario=pause", "race of lua on sale under pause")
	if code, body := doToken(t, e, "POST", "/guard?owner=race%20of%20lua%20on%20sale", ""); code != 400 {
		t.Errorf("POST /guard?owner=...: %d %v, want 400", code, body)
	}
	// A renewal of a free guard takes it again only for the time the run
	// took it first: never more than guard.MaxHold in all.
	e.mr.Del(guard.Key)
	old := strconv.FormatInt(time.Now().Add(-guard.MaxHold-time.Second).UnixMilli(), 10)
	if code, body := doToken(t, e, "PUT", "/guard?run=bench&since="+old, "0123456789abcdef0123456789abcdef"); code != 400 {
		t.Errorf("renewal since more than MaxHold ago: %d %v, want 400", code, body)
	}
	if e.mr.Exists(guard.Key) {
		t.Error("a renewal since more than MaxHold ago took the guard")
	}
	bare := newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) { c.Redis = rdb }) // no key
	if code, _ := doKey(t, bare, "POST", "/guard?run=bench", "", ""); code != 404 {
		t.Errorf("POST /guard on an app given no key: %d, want 404 (it takes no guard)", code)
	}
}

// TestGuardOfADeadRunExpires: a run that stops renewing (its process
// died) holds the guard one lease more, then /reset and another run's
// take pass; a renewal after Redis lost the guard takes it again.
func TestGuardOfADeadRunExpires(t *testing.T) {
	e := guardEnv(t, 2*time.Second, 0)
	take(t, e, "run=matrix", "matrix")
	mustDo(t, e, "POST", "/reset?stock=5", 409)
	e.mr.FastForward(time.Second)
	mustDo(t, e, "POST", "/reset?stock=5", 409)
	e.mr.FastForward(1100 * time.Millisecond)
	mustDo(t, e, "POST", "/reset?stock=5", 200)
	token, scope := take(t, e, "run=chaos", "chaos")

	e.mr.Del(guard.Key) // it expired while the renewals did not get through
	if code, body := doToken(t, e, "PUT", "/guard?run=chaos&scope="+scope+"&since="+since(), token); code != 200 || body["owner"] != "chaos" {
		t.Fatalf("renewal of a guard that expired: %d %v, want 200", code, body)
	}
	if code, body := doToken(t, e, "POST", "/reset?stock=5", ""); code != 409 || body["owner"] != "chaos" {
		t.Errorf("POST /reset once the renewal took the guard again: %d %v, want 409", code, body)
	}
	if ttl := e.mr.TTL(guard.Key); ttl <= 0 || ttl > 2*time.Second {
		t.Errorf("the guard's lease: %s, want up to 2s", ttl)
	}
}

// TestGuardBadInput: /guard without a run, with a bad one, with unknown
// parameters, a renewal or release without a token: each a 400 that
// takes nothing; and without a Redis the app serves no /guard and
// refuses no reset.
func TestGuardBadInput(t *testing.T) {
	e := guardEnv(t, 0, 0)
	for _, req := range []struct{ method, target, token string }{
		{"POST", "/guard", ""},
		{"POST", "/guard?run=", ""},
		{"POST", "/guard?run=mine", ""},
		{"POST", "/guard?owner=x", ""},
		{"POST", "/guard?run=bench&owner=x", ""},
		{"POST", "/guard?run=race&lock=nosuch", ""},
		{"POST", "/guard?run=race&lock=lua&endpoint=buy", ""},
		{"POST", "/guard?run=race&endpoint=sale", ""},
		{"POST", "/guard?run=race&lock=lua&scenario=a%0Ab", ""},
		{"POST", "/guard?run=bench&run=race", ""},
		{"POST", "/guard?run=bench&ttl=1h", ""},
		{"PUT", "/guard?run=bench&scope=run1&since=" + since(), ""},
		{"PUT", "/guard?run=bench&scope=run1", "t"},
		{"PUT", "/guard?run=bench&since=" + since(), "t"},
		{"PUT", "/guard?run=bench&scope=run0&since=" + since(), "t"},
		{"PUT", "/guard?run=bench&scope=run01&since=" + since(), "t"},
		{"POST", "/guard?run=bench&guest=0", ""},
		{"POST", "/guard?run=bench&guest=", ""},
		{"PUT", "/guard?run=bench&since=x", "t"},
		{"PUT", "/guard?run=bench&since=" + since(), strings.Repeat("t", 65)},
		{"DELETE", "/guard", ""},
		{"DELETE", "/guard?run=bench", "t"},
		{"GET", "/guard?x=1", ""},
	} {
		code, body := doToken(t, e, req.method, req.target, req.token)
		if code != 400 || body["error"] == nil {
			t.Errorf("%s %s: %d %v, want a 400 that says why", req.method, req.target, code, body)
		}
	}
	if e.mr.Exists(guard.Key) {
		t.Error("bad requests took the guard")
	}
	bare := newEnv(t) // no Config.Redis
	mustDo(t, bare, "POST", "/guard?run=bench", 404)
	mustDo(t, bare, "POST", "/reset?stock=5", 200)
}

// TestItemsAreBounded: /reset makes at most MaxItems items at once: one
// more is a 409 too_many_items naming the bound, that makes nothing;
// items that exist can be reset again as often as wanted.
func TestItemsAreBounded(t *testing.T) {
	e := guardEnv(t, 0, 5)
	mustDo(t, e, "POST", "/reset?stock=5", 200) // the lab's item is not counted
	mustDo(t, e, "POST", "/reset?stock=5&skus=3", 200)
	mustDo(t, e, "POST", "/reset?stock=5&sku=a", 200)
	mustDo(t, e, "POST", "/reset?stock=5&sku=b", 200)
	before := e.mr.Dump()
	for _, target := range []string{"/reset?stock=5&sku=c", "/reset?stock=5&skus=6"} {
		code, body := doToken(t, e, "POST", target, "")
		msg, _ := body["error"].(string)
		if code != 409 || body["reason"] != contract.ReasonTooManyItems || body["max_items"] != 5.0 || !strings.Contains(msg, "5 items") {
			t.Errorf("POST %s with 5 items: %d %v, want 409 too_many_items naming the bound", target, code, body)
		}
	}
	if after := e.mr.Dump(); after != before {
		t.Errorf("refused resets changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	mustDo(t, e, "POST", "/sale?lock=lua&sku=c", 404)
	for _, target := range []string{"/reset?stock=5&skus=3", "/reset?stock=4&sku=a", "/reset?stock=4&sku=3", "/reset?stock=5"} {
		mustDo(t, e, "POST", target, 200)
	}
	mustDo(t, e, "POST", "/sale?lock=lua&sku=a", 200)
}

// TestRunsScopesGo: a run's resets make its items in its scope (apart
// from the lab's: the lab's item and items 1 to K as they were); once
// it ended and RunIdle passed, the next take deletes every key of its
// items, and its set; a run that has not been idle that long keeps them.
func TestRunsScopesGo(t *testing.T) {
	e := guardEnv(t, 0, 0)
	ctx := context.Background()
	mustDo(t, e, "POST", "/reset?stock=9", 200)
	mustDo(t, e, "POST", "/reset?stock=9&skus=2", 200)
	labKeys := e.rdb.Keys(ctx, "*{item*").Val()
	token, scope := take(t, e, "run=bench", "bench")
	for _, target := range []string{"/reset?stock=5", "/reset?stock=5&skus=3", "/sale?lock=fenced", "/sale?lock=fair&sku=3", "/testLock?lock=lua&sku=1"} {
		if code, body := doToken(t, e, "POST", target, token); code != 200 {
			t.Fatalf("the run's POST %s: %d %v", target, code, body)
		}
	}
	mark := inventory.ScopeMark(scope)
	runKeys := e.rdb.Keys(ctx, "*"+mark+"*").Val()
	if len(runKeys) < 9 {
		t.Fatalf("the run's keys %v, want its items' (stock, sold, num of 4 items, and its locks')", runKeys)
	}
	for _, target := range []string{"/stock", "/stock?sku=1", "/stock?sku=2"} {
		if _, _, body := mustDo(t, e, "GET", target, 200); body["stock"] != 9.0 || body["sold"] != 0.0 || body["num"] != 0.0 {
			t.Errorf("the lab's GET %s during the run: %v, want it as it was", target, body)
		}
	}
	if code, body := doToken(t, e, "DELETE", "/guard", token); code != 200 {
		t.Fatal(code, body)
	}
	// Another run soon after: the first's scope stays (its requests may
	// still be on their way).
	token2, _ := take(t, e, "run=bench", "bench")
	if n := len(e.rdb.Keys(ctx, "*"+mark+"*").Val()); n != len(runKeys) {
		t.Errorf("%d of the ended run's keys left at once, want %d", n, len(runKeys))
	}
	doToken(t, e, "DELETE", "/guard", token2)
	// RunIdle later, a take drops it.
	old := float64(time.Now().Add(-handlers.RunIdle - time.Second).UnixMilli())
	e.rdb.ZAdd(ctx, handlers.RunsKey, redis.Z{Score: old, Member: scope})
	take(t, e, "run=bench", "bench")
	if left := e.rdb.Keys(ctx, "*"+mark+"*").Val(); len(left) != 0 {
		t.Errorf("the ended run's keys left: %v", left)
	}
	if e.rdb.Exists(ctx, handlers.RunItemsKey(scope)).Val() != 0 || e.rdb.ZScore(ctx, handlers.RunsKey, scope).Err() == nil {
		t.Error("the ended run is still noted")
	}
	if got := e.rdb.Keys(ctx, "*{item*").Val(); len(got) < len(labKeys) {
		t.Errorf("the lab's keys %v, want %v kept", got, labKeys)
	}
}
