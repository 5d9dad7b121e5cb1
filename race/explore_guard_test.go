package race

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// TestExploreTakesTheGuard: a search holds the stack's run guard while it
// runs (as "explore of LOCK"), and while another run holds it a search
// is a 409 run_in_progress naming that run, that starts nothing; beyond
// PerMinute searches in a minute, a 429 with Retry-After, that starts
// nothing either.
func TestExploreTakesTheGuard(t *testing.T) {
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	const key = "the-stacks-redis-password"
	app := httptest.NewServer(handlers.New(handlers.Config{
		Instance: "x-1", Inventory: inventory.New(rdb), Redis: rdb, RunKey: key,
		Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second}, lock.RedlockOptions{}),
	}))
	t.Cleanup(app.Close)
	store := guard.NewStore(rdb, 0)

	svc := New(app.URL, nil)
	svc.Key = key
	svc.Explore.PerMinute = 2
	holders := make(chan string, 8)
	svc.Explore.run = func(ctx context.Context, tg explore.Target, _ explore.Config) explore.Result {
		h, held, _ := store.Holder(ctx)
		if !held {
			h.Owner = "nobody"
		}
		holders <- h.Owner
		return explore.Result{Target: tg.Name, Verdict: explore.None}
	}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	ctx := context.Background()

	// Another run holds the stack: refused, nothing started.
	token, _, err := store.Take(ctx, "race of lua on sale")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // more than PerMinute: a refusal does not count
		if code, body := post(t, srv.URL+"/explore?lock=lua"); code != http.StatusConflict ||
			body["reason"] != guard.ReasonBusy || body["owner"] != "race of lua on sale" {
			t.Errorf("POST /explore during a race: %d %v, want 409 run_in_progress naming it", code, body)
		}
	}
	store.Release(ctx, token)

	for i := range 2 {
		if code, body := post(t, srv.URL+"/explore?lock=lua"); code != http.StatusOK {
			t.Fatalf("search %d: %d %v", i+1, code, body)
		}
		if got := <-holders; got != "explore of lua" {
			t.Errorf("search %d ran with the guard held by %q, want \"explore of lua\"", i+1, got)
		}
		if _, held, _ := store.Holder(ctx); held {
			t.Errorf("search %d done, and the guard still held", i+1)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/explore?lock=lua", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || after < 1 || after > 60 {
		t.Errorf("a third search within a minute: %s, Retry-After %q; want 429 and 1 to 60 s", resp.Status, resp.Header.Get("Retry-After"))
	}
	select {
	case got := <-holders:
		t.Errorf("a refused search ran (guard held by %q)", got)
	default:
	}
}
