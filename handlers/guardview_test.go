package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
)

// twin is another instance of e's app: same Redis, same ladder.
func twin(e *env) *env {
	return &env{router: handlers.New(handlers.Config{
		Instance: "test-2", Inventory: inventory.New(e.rdb), Ladder: e.ladder, MaxStock: 1000,
		Hosts: []string{"example.com"}, Redis: e.rdb, RunKey: testKey,
	}), mr: e.mr, rdb: e.rdb, ladder: e.ladder}
}

// TestSaleWhileARunHoldsTheGuard: while a run holds the guard, /sale
// and /testLock without its token (the page's buttons in another tab), on
// any item, or with another token, are a 409 run_in_progress naming the
// run, and change nothing; the run's own pass; once released, anyone's.
// Another instance, whose view of the guard was read before the take,
// refuses them as soon as the run's take returns (guard.Take waits out
// the views' age).
func TestSaleWhileARunHoldsTheGuard(t *testing.T) {
	e := guardEnv(t, 0, 0)
	other := twin(e)
	mustDo(t, e, "POST", "/reset?stock=7", 200)
	mustDo(t, e, "POST", "/reset?stock=7&sku=b", 200)
	mustDo(t, other, "POST", "/sale?lock=lua", 200) // its view: nobody holds the guard

	srv := httptest.NewServer(e.router)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	lease, err := guard.Take(ctx, srv.Client(), srv.URL, testKey, guard.Run{Kind: "race", Lock: "lua", Endpoint: "sale"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Release(ctx) })

	before := e.mr.Dump()
	for _, app := range []*env{e, other} {
		for _, req := range []struct{ target, token string }{
			{"/sale?lock=lua", ""},
			{"/sale?lock=none", ""},
			{"/sale?lock=atomic&sku=b", ""},
			{"/testLock?lock=lua", ""},
			{"/sale?lock=lua", "0123456789abcdef0123456789abcdef"},
		} {
			code, body := doToken(t, app, "POST", req.target, req.token)
			if code != http.StatusConflict || body["reason"] != contract.ReasonRunInProgress || body["owner"] != "race of lua on sale" {
				t.Errorf("POST %s (token %q) during the race: %d %v, want 409 run_in_progress naming the race", req.target, req.token, code, body)
			}
		}
	}
	if after := e.mr.Dump(); after != before {
		t.Errorf("refused requests changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	for _, app := range []*env{e, other} {
		if code, body := doToken(t, app, "POST", "/sale?lock=lua", lease.Token()); code != 200 {
			t.Errorf("the run's own sale: %d %v, want 200", code, body)
		}
		if code, body := doToken(t, app, "POST", "/testLock?lock=lua", lease.Token()); code != 200 {
			t.Errorf("the run's own testLock: %d %v, want 200", code, body)
		}
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, e, "POST", "/sale?lock=lua", 200)
}

// TestRunsTokenWhileRedisIsDown: a run that took the guard after this
// instance last read it, its Redis stopped at once (the fault suite's
// redis-stop), is answered as Redis's outage (503), never as another
// run's 409, which the judge would read as sold out.
func TestRunsTokenWhileRedisIsDown(t *testing.T) {
	e := guardEnv(t, 0, 0)
	mustDo(t, e, "POST", "/reset?stock=7", 200)
	// The runs take and release the guard through another instance, so
	// that this one learns of them only by reading Redis.
	srv := httptest.NewServer(twin(e).router)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	first, err := guard.Take(ctx, srv.Client(), srv.URL, testKey, guard.Run{Kind: "race", Lock: "lua", Endpoint: "sale"})
	if err != nil {
		t.Fatal(err)
	}
	if code, body := doToken(t, e, "POST", "/sale?lock=lua", first.Token()); code != 200 {
		t.Fatalf("the first run's sale: %d %v, want 200", code, body)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := guard.Take(ctx, srv.Client(), srv.URL, testKey, guard.Run{Kind: "race", Lock: "lua", Endpoint: "sale"})
	if err != nil {
		t.Fatal(err)
	}
	e.mr.Close() // Redis down before this instance read the second take
	code, body := doToken(t, e, "POST", "/sale?lock=lua&try=0", second.Token())
	if code != http.StatusServiceUnavailable {
		t.Fatalf("the second run's sale with Redis down: %d %v, want 503", code, body)
	}
}
