package guard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// TestStore: on a real Redis (the embedded one without redis-server),
// one run holds the guard at a time; another's take is refused naming
// it; Admit lets only the holder's token through; a renewal by another
// token is ErrLost and changes nothing; release is compare-and-delete;
// a holder that stops renewing loses the guard a lease later; and a
// renewal of a guard Redis lost takes it again.
func TestStore(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	s := guard.NewStore(rdb, ttl)

	token, h, err := s.Take(ctx, "bench (pid 1)")
	if err != nil || token == "" || h.Owner != "bench (pid 1)" || time.Since(h.Since) > time.Minute {
		t.Fatalf("Take: %q %+v %v", token, h, err)
	}
	_, _, err = s.Take(ctx, "race")
	var busy *guard.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, guard.ErrBusy) || errors.Is(err, guard.ErrLost) ||
		busy.Holder.Owner != "bench (pid 1)" || !busy.Holder.Since.Equal(h.Since) {
		t.Fatalf("a second Take: %v, want ErrBusy naming bench since %s", err, h.Since)
	}
	if scope, err := s.Admit(ctx, token); err != nil || scope != h.Scope || scope == "" {
		t.Errorf("Admit with the holder's token: %q %v, want its scope %q", scope, err, h.Scope)
	}
	if _, err := s.Admit(ctx, ""); !errors.Is(err, guard.ErrBusy) || errors.Is(err, guard.ErrLost) {
		t.Errorf("Admit without a token: %v, want ErrBusy", err)
	}
	for _, other := range []string{"x", token[:len(token)-1]} {
		if _, err := s.Admit(ctx, other); !errors.Is(err, guard.ErrLost) {
			t.Errorf("Admit with %q: %v, want ErrLost: a token not the holder's", other, err)
		}
	}
	if _, err := s.Renew(ctx, token[:len(token)-1], h); !errors.Is(err, guard.ErrLost) {
		t.Errorf("Renew with a prefix of the token: %v, want ErrLost", err)
	}
	if ok, err := s.Release(ctx, token[:len(token)-1]); ok || err != nil {
		t.Errorf("Release with a prefix of the token: %v %v, want false", ok, err)
	}
	if got, ok, err := s.Holder(ctx); !ok || err != nil || got.Owner != "bench (pid 1)" {
		t.Errorf("Holder: %+v %v %v", got, ok, err)
	}

	// Renewed, it outlives its lease; not renewed, it expires.
	for range 4 {
		time.Sleep(ttl / 3)
		if _, err := s.Renew(ctx, token, h); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	if _, ok, _ := s.Holder(ctx); !ok {
		t.Fatal("a renewed guard expired")
	}
	time.Sleep(ttl + 200*time.Millisecond)
	if scope, err := s.Admit(ctx, ""); err != nil || scope != "" {
		t.Errorf("Admit a lease after the holder stopped renewing: %q %v", scope, err)
	}
	if _, err := s.Admit(ctx, token); !errors.Is(err, guard.ErrLost) {
		t.Errorf("Admit the dead holder's token once nobody holds the guard: %v, want ErrLost", err)
	}
	token2, h2, err := s.Take(ctx, "race")
	if err != nil {
		t.Fatalf("Take once the dead holder's guard expired: %v", err)
	}
	if h2.Scope == h.Scope {
		t.Errorf("two takes share the scope %q", h.Scope)
	}
	if _, err := s.Renew(ctx, token, h); !errors.As(err, &busy) || !errors.Is(err, guard.ErrLost) || busy.Holder.Owner != "race" {
		t.Errorf("the dead holder's renewal: %v, want ErrLost naming race", err)
	}
	if ok, err := s.Release(ctx, token); ok || err != nil {
		t.Errorf("the dead holder's release: %v %v, want false", ok, err)
	}

	rdb.Del(ctx, guard.Key) // it expired while the run's renewals did not get through
	if got, err := s.Renew(ctx, token2, h2); err != nil || got.Owner != "race" || got.Scope != h2.Scope {
		t.Fatalf("Renew of a guard that expired: %+v %v", got, err)
	}
	if pttl := rdb.PTTL(ctx, guard.Key).Val(); pttl <= 0 || pttl > ttl {
		t.Errorf("the guard taken again has a lease of %s, want up to %s", pttl, ttl)
	}
	if ok, err := s.Release(ctx, token2); !ok || err != nil {
		t.Errorf("Release: %v %v", ok, err)
	}
	if _, ok, _ := s.Holder(ctx); ok {
		t.Error("held after Release")
	}
	// Another run took the stack and let it go since: a renewal of the
	// guard that expired under the first must not take it again, for
	// that run's resets may be in what it reads back.
	token3, h3, err := s.Take(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, guard.Key)
	if _, _, err := s.Take(ctx, "thief"); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, guard.Key)
	if _, err := s.Renew(ctx, token3, h3); !errors.Is(err, guard.ErrLost) {
		t.Errorf("Renew of a guard another run took and let go since: %v, want ErrLost", err)
	}
	if _, ok, _ := s.Holder(ctx); ok {
		t.Error("a renewal took the guard again after another run's take")
	}
}

// TestOwnerTakesFromAGuest: a run taken for a page's request (a guest's)
// gives the stack up to a take of the owner's at once, and learns it at
// its next renewal (Preempted); a guest's take is refused while anyone
// holds it, and the owner's while the owner's holds it.
func TestOwnerTakesFromAGuest(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := guard.NewStore(rdb, time.Minute)
	g, err := s.TakeAs(ctx, "race of lua on sale", true)
	if err != nil || !g.Holder.Guest || g.From != nil {
		t.Fatalf("a guest's take: %+v %v", g, err)
	}
	if _, err := s.TakeAs(ctx, "race of lua on testLock", true); !errors.Is(err, guard.ErrBusy) {
		t.Errorf("a guest's take while a guest holds it: %v, want ErrBusy", err)
	}
	o, err := s.TakeAs(ctx, "bench", false)
	if err != nil || o.Holder.Guest || o.From == nil || o.From.Owner != "race of lua on sale" || o.Holder.Scope == g.Holder.Scope {
		t.Fatalf("the owner's take from a guest: %+v %v, want taken from the race, in a scope of its own", o, err)
	}
	var busy *guard.BusyError
	if _, err := s.Renew(ctx, g.Token, g.Holder); !errors.As(err, &busy) || !busy.Preempted || busy.Holder.Owner != "bench" {
		t.Errorf("the guest's renewal: %v, want ErrLost, preempted by bench", err)
	}
	if _, err := s.Admit(ctx, g.Token); !errors.Is(err, guard.ErrLost) {
		t.Errorf("the guest's request: %v, want ErrLost", err)
	}
	for _, guest := range []bool{true, false} {
		if _, err := s.TakeAs(ctx, "demo", guest); !errors.Is(err, guard.ErrBusy) {
			t.Errorf("a take (guest %v) while the owner's run holds it: %v, want ErrBusy", guest, err)
		}
	}
}

// TestHoldIsBounded: no holding outlasts guard.MaxHold, renewals
// included: a renewal past it frees the guard and says so (Bound), one
// near it renews only to it, and a renewal of a lost guard takes it
// again only within it. Break frees anyone's guard and names it.
func TestHoldIsBounded(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := guard.NewStore(rdb, time.Minute)
	held := func(token string, since time.Time) {
		t.Helper()
		v := token + " " + strconv.FormatInt(since.UnixMilli(), 10) + " 1 o bench"
		if err := rdb.Set(ctx, guard.Key, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		rdb.Set(ctx, guard.SeqKey, 1, 0)
	}
	held("t1", time.Now().Add(-guard.MaxHold-time.Second))
	var busy *guard.BusyError
	bench := func(since time.Time) guard.Holder { return guard.Holder{Owner: "bench", Since: since, Scope: "run1"} }
	if _, err := s.Renew(ctx, "t1", bench(time.Now())); !errors.As(err, &busy) || !busy.Bound || !errors.Is(err, guard.ErrLost) {
		t.Errorf("a renewal past MaxHold: %v, want a Bound ErrLost", err)
	}
	if n := rdb.Exists(ctx, guard.Key).Val(); n != 0 {
		t.Error("a holding past MaxHold was renewed")
	}
	held("t2", time.Now().Add(-guard.MaxHold+2*time.Second))
	if _, err := s.Renew(ctx, "t2", bench(time.Now())); err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, guard.Key).Val(); pttl <= 0 || pttl > 2*time.Second {
		t.Errorf("a renewal 2s before MaxHold: a lease of %s, want at most 2s", pttl)
	}
	rdb.Del(ctx, guard.Key)
	if _, err := s.Renew(ctx, "t3", bench(time.Now().Add(-guard.MaxHold))); !errors.As(err, &busy) || !busy.Bound {
		t.Errorf("taking again a guard first taken MaxHold ago: %v, want Bound", err)
	}
	if n := rdb.Exists(ctx, guard.Key).Val(); n != 0 {
		t.Error("a renewal took again a guard first taken MaxHold ago")
	}

	if _, ok, err := s.Break(ctx); ok || err != nil {
		t.Errorf("Break of a free guard: %v %v, want false", ok, err)
	}
	_, h, err := s.Take(ctx, "race of lua on sale")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Break(ctx)
	if !ok || err != nil || got.Owner != "race of lua on sale" || !got.Since.Equal(h.Since) {
		t.Errorf("Break: %+v %v %v, want the race's holding", got, ok, err)
	}
	if n := rdb.Exists(ctx, guard.Key).Val(); n != 0 {
		t.Error("held after Break")
	}
}

// key is the run key of app's handlers.
const key = "the-stacks-redis-password"

// app serves the handlers over rdb, with the guard's lease ttl.
func app(t *testing.T, rdb *redis.Client, ttl time.Duration) *httptest.Server {
	t.Helper()
	gin.SetMode(gin.TestMode)
	srv := httptest.NewServer(handlers.New(handlers.Config{
		Instance: "g-1", Inventory: inventory.New(rdb), Redis: rdb, GuardTTL: ttl, RunKey: key,
		Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second}, lock.RedlockOptions{}),
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLeaseThroughTheApp: a run takes the guard through the app and
// keeps it past its lease by renewing; meanwhile another run's take is
// refused naming it, and only the run's own reset passes; released, the
// guard is free. A run whose guard expired and was taken by another
// learns it (Err is ErrLost). An app without a guard: ErrNotServed.
func TestLeaseThroughTheApp(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	srv := app(t, rdb, ttl)
	c := srv.Client()

	if _, err := guard.Take(ctx, c, srv.URL, "", guard.Run{Kind: "bench"}); !errors.Is(err, guard.ErrNoKey) {
		t.Fatalf("a take without the key: %v, want ErrNoKey", err)
	}
	l, err := guard.Take(ctx, c, srv.URL, key, guard.Run{Kind: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() == "" || l.Holder().Owner != "bench" {
		t.Fatalf("lease %q %+v", l.Token(), l.Holder())
	}
	time.Sleep(3 * ttl) // renewed meanwhile
	if _, err := guard.Take(ctx, c, srv.URL, key, guard.Run{Kind: "race"}); !errors.Is(err, guard.ErrBusy) {
		t.Fatalf("a take past the lease of the holder's: %v, want ErrBusy", err)
	}
	post := func(target, token string) int {
		req, _ := http.NewRequest("POST", srv.URL+target, nil)
		if token != "" {
			req.Header.Set(guard.Header, token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, target := range []string{"/reset?stock=5", "/sale?lock=lua", "/testLock?lock=lua"} {
		if code := post(target, ""); code != http.StatusConflict {
			t.Errorf("anyone's POST %s: %d, want 409", target, code)
		}
		if code := post(target, l.Token()); code != http.StatusOK {
			t.Errorf("the run's own POST %s: %d, want 200", target, code)
		}
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err while held: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, guard.Key).Val(); n != 0 {
		t.Error("held after Release")
	}

	// Lost: the guard expires under the run (Redis lost it here) and
	// another run takes it before the run renews.
	l, err = guard.Take(ctx, c, srv.URL, key, guard.Run{Kind: "chaos"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	rdb.Del(ctx, guard.Key)
	other := guard.NewStore(rdb, time.Minute)
	if _, _, err := other.Take(ctx, "thief"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * ttl)
	for l.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var busy *guard.BusyError
	if err := l.Err(); !errors.Is(err, guard.ErrLost) || !errors.As(err, &busy) || busy.Holder.Owner != "thief" {
		t.Errorf("Err after another run took the guard: %v, want ErrLost naming thief", err)
	}

	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	if l, err := guard.Take(ctx, c, plain.URL, key, guard.Run{Kind: "bench"}); l != nil || !errors.Is(err, guard.ErrNotServed) {
		t.Errorf("Take where /guard is a 404: %v %v, want ErrNotServed", l, err)
	}
	var none *guard.Lease
	if none.Token() != "" || none.Err() != nil || none.Release(ctx) != nil {
		t.Error("a nil lease is not no guard")
	}
}
