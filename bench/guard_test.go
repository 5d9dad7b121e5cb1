package bench_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
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
)

// runKey is guardedApp's run key.
const runKey = "the-stacks-redis-password"

// guardedApp is the app (with its run guard) over a miniredis. Its
// first three sales each first have someone else reset the stock to
// 1000 and sell one, and count those refused.
func guardedApp(t *testing.T) (*httptest.Server, *redis.Client, *atomic.Int32) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	app := handlers.New(handlers.Config{
		Instance: "b-1", Inventory: inventory.New(rdb), Redis: rdb, RunKey: runKey,
		Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second, Wait: 2 * time.Second}, lock.RedlockOptions{}),
	})
	var sales, refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sale" && sales.Add(1) <= 3 {
			for _, target := range []string{"/reset?stock=1000", "/sale?lock=none"} {
				stray := httptest.NewRequest("POST", target, nil)
				stray.Host = "127.0.0.1"
				rec := httptest.NewRecorder()
				app.ServeHTTP(rec, stray)
				if rec.Code == http.StatusConflict {
					refused.Add(1)
				}
			}
		}
		app.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, rdb, &refused
}

// TestRunsHoldTheGuard: a run holds the stack's run guard from before
// its reset to its read-back: a /reset from anyone else during the load
// is refused (and the verdict stays SAFE, not a false OVERSOLD), and the
// guard is free once the run returns. A run while another holds the
// guard is an error naming it, that resets nothing; a session holds the
// guard until Close.
func TestRunsHoldTheGuard(t *testing.T) {
	srv, rdb, refused := guardedApp(t)
	ctx := context.Background()
	cfg := bench.Config{URL: srv.URL, Requests: 300, Concurrency: 8, Stock: 100, Run: guard.Run{Kind: "matrix"}, RunKey: runKey}
	row, err := bench.RunOne(ctx, cfg, "lua", "sale")
	if err != nil {
		t.Fatal(err)
	}
	if n := refused.Load(); n != 6 {
		t.Errorf("%d of 3 resets and 3 sales during the run refused, want all", n)
	}
	if row.Verdict != bench.VerdictSafe || row.Sold != 100 {
		t.Errorf("lua under refused resets: %s, %d sold, want SAFE and 100", row.Verdict, row.Sold)
	}
	if rdb.Exists(ctx, guard.Key).Val() != 0 {
		t.Error("the run returned and still holds the guard")
	}

	store := guard.NewStore(rdb, 0)
	token, _, err := store.Take(ctx, "a race")
	if err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, inventory.KeyStock, 7, 0)
	for name, run := range map[string]func() error{
		"Run":    func() error { _, err := bench.Run(ctx, cfg); return err },
		"RunOne": func() error { _, err := bench.RunOne(ctx, cfg, "lua", "sale"); return err },
		"Open":   func() error { _, err := bench.Open(ctx, cfg, oneServer(srv.URL), nil); return err },
	} {
		err := run()
		var busy *guard.BusyError
		if !errors.Is(err, guard.ErrBusy) || !errors.As(err, &busy) || busy.Holder.Owner != "a race" {
			t.Errorf("%s while a race holds the guard: %v, want guard.ErrBusy naming it", name, err)
		}
	}
	if v := rdb.Get(ctx, inventory.KeyStock).Val(); v != "7" {
		t.Errorf("stock %s after refused runs, want 7: nothing reset", v)
	}
	store.Release(ctx, token)

	s, err := bench.Open(ctx, cfg, oneServer(srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A hook beside the load (a scenario's own sale) carries the run's
	// token, and passes the guard.
	hookSale := 0
	hook := bench.Hook{At: 0.5, About: "a sale of the hook's own", Do: func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/sale?lock=none", nil)
		req.Header.Set(guard.Header, guard.TokenOf(ctx))
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		hookSale = resp.StatusCode
		return nil
	}}
	if _, err := s.Run(ctx, "lua", "sale", bench.Shape{Hooks: []bench.Hook{hook}}); err != nil {
		t.Fatal(err)
	}
	if hookSale != http.StatusOK {
		t.Errorf("the hook's own sale during the run: %d, want 200 (it carries the run's token)", hookSale)
	}
	if h, held, _ := store.Holder(ctx); !held || h.Owner != "matrix" {
		t.Errorf("a session between runs: guard %+v held %v, want held by the bench", h, held)
	}
	s.Close()
	if rdb.Exists(ctx, guard.Key).Val() != 0 {
		t.Error("the session closed and still holds the guard")
	}

	// Without the stack's key, no run: the app hands out no guard.
	cfg.RunKey = ""
	if _, err := bench.RunOne(ctx, cfg, "lua", "sale"); !errors.Is(err, guard.ErrNoKey) {
		t.Errorf("a run without the key: %v, want guard.ErrNoKey", err)
	}
}
