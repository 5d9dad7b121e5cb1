package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
		} {
			code, body := doToken(t, app, "POST", req.target, req.token)
			if code != http.StatusConflict || body["reason"] != contract.ReasonRunInProgress || body["owner"] != "race of lua on sale" {
				t.Errorf("POST %s (token %q) during the race: %d %v, want 409 run_in_progress naming the race", req.target, req.token, code, body)
			}
		}
		// A token not the run's: refused, never moved to the lab's item.
		code, body := doToken(t, app, "POST", "/sale?lock=lua", "0123456789abcdef0123456789abcdef")
		if code != http.StatusConflict || body["reason"] != contract.ReasonGuardLost || body["owner"] != "race of lua on sale" {
			t.Errorf("POST /sale with another token during the race: %d %v, want 409 guard_lost naming the race", code, body)
		}
	}
	if after := e.mr.Dump(); after != before {
		t.Errorf("refused requests changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	if code, body := doToken(t, e, "POST", "/reset?stock=7", lease.Token()); code != 200 {
		t.Fatalf("the run's reset: %d %v", code, body)
	}
	for _, app := range []*env{e, other} {
		if code, body := doToken(t, app, "POST", "/sale?lock=lua", lease.Token()); code != 200 {
			t.Errorf("the run's own sale: %d %v, want 200", code, body)
		}
		if code, body := doToken(t, app, "POST", "/testLock?lock=lua", lease.Token()); code != 200 {
			t.Errorf("the run's own testLock: %d %v, want 200", code, body)
		}
	}
	// Its sales are in its scope, the lab's item as it was.
	if code, body := doToken(t, e, "GET", "/stock", lease.Token()); code != 200 || body["stock"] != 5.0 || body["sold"] != 2.0 || body["num"] != 2.0 {
		t.Errorf("the run's /stock: %d %v, want stock 5, sold 2, num 2", code, body)
	}
	if _, _, body := mustDo(t, e, "GET", "/stock", 200); body["stock"] != 6.0 || body["sold"] != 1.0 {
		t.Errorf("the lab's /stock: %v, want stock 6, sold 1", body)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustDo(t, e, "POST", "/sale?lock=lua", 200)
	// Its token once it ended: refused, on every endpoint that counts.
	for _, req := range []struct{ method, target string }{{"POST", "/sale?lock=lua"}, {"POST", "/reset?stock=3"}, {"GET", "/stock"}} {
		if code, body := doToken(t, e, req.method, req.target, lease.Token()); code != http.StatusConflict || body["reason"] != contract.ReasonGuardLost {
			t.Errorf("%s %s with the token of a run that ended: %d %v, want 409 guard_lost", req.method, req.target, code, body)
		}
	}
}

// TestSaleAdmittedBeforeTheTakeIsNotTheRuns is the forged
// verdict, made certain: a sale without a token passes the guard's
// check while nobody holds it, then waits for its lock; a run takes the
// guard and resets; the sale gets its lock and sells. It sells the
// lab's item: the run's books, in its scope, show nothing of it. (Before
// scopes it sold the run's item, and a correct lock read OVERSOLD.)
func TestSaleAdmittedBeforeTheTakeIsNotTheRuns(t *testing.T) {
	e := guardEnv(t, 0, 0)
	mustDo(t, e, "POST", "/reset?stock=7", 200)
	ctx := context.Background()
	key := inventory.ItemOf("").StockLock
	if err := e.rdb.Set(ctx, key, "someone", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.router)
	t.Cleanup(srv.Close)
	sold := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/sale?lock=lua&try=5s", "", nil)
		if err != nil {
			sold <- 0
			return
		}
		resp.Body.Close()
		sold <- resp.StatusCode
	}()
	// The sale is past the guard's check once it tries the lock: the
	// lock's key is asked for (SET NX) again and again.
	base := e.mr.CommandCount()
	for deadline := time.Now().Add(10 * time.Second); e.mr.CommandCount()-base < 6; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sale never tried the lock")
		}
	}
	lease, err := guard.Take(ctx, srv.Client(), srv.URL, testKey, guard.Run{Kind: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Release(ctx) })
	if code, body := doToken(t, e, "POST", "/reset?stock=10", lease.Token()); code != 200 {
		t.Fatalf("the run's reset: %d %v", code, body)
	}
	e.rdb.Del(ctx, key) // the sale gets its lock
	if code := <-sold; code != 200 {
		t.Fatalf("the sale admitted before the take: %d, want 200 (it sells the lab's item)", code)
	}
	if code, body := doToken(t, e, "GET", "/stock", lease.Token()); code != 200 || body["stock"] != 10.0 || body["sold"] != 0.0 {
		t.Errorf("the run's books: %d %v, want stock 10, sold 0: another's sale landed in them", code, body)
	}
	if _, _, body := mustDo(t, e, "GET", "/stock", 200); body["stock"] != 6.0 || body["sold"] != 1.0 {
		t.Errorf("the lab's item: %v, want stock 6, sold 1", body)
	}
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
	if code, body := doToken(t, e, "POST", "/reset?stock=7", first.Token()); code != 200 {
		t.Fatalf("the first run's reset: %d %v, want 200", code, body)
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
