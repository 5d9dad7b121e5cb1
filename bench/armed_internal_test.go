package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// An armed request that waited for the lock while the others sold the
// rest finds no stock (409 sold out): it had no business for its hook to
// strike, and the hook's miss is its, as a 503's is, not a failed
// staging.
func TestArmedSoldOutExcusesAMiss(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path != "/sale":
			json.NewEncoder(w).Encode(map[string]int{"stock": 20, "sold": 0, "num": 0})
		case r.URL.Query().Has("work"):
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]any{"sold": false, "remaining": 0, "reason": "sold_out"})
		default:
			w.WriteHeader(http.StatusConflict) // the others find it sold out too: the books stay whole
			json.NewEncoder(w).Encode(map[string]any{"sold": false, "remaining": 0, "reason": "sold_out"})
		}
	}))
	t.Cleanup(srv.Close)
	cfg, err := Config{URL: srv.URL, Requests: 20, Concurrency: 2, Stock: 20, Timeout: 10 * time.Second}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(cfg)
	defer h.close()
	missing := func(context.Context) error { return fmt.Errorf("no holder in its section: %w", ErrNotStruck) }
	ld := &load{scenario: "session-cut", armed: url.Values{"work": {"600ms"}}, armAt: []uint64{5},
		hooks: []runHook{{at: 5, about: "cut a holder", do: missing}}}
	r, err := h.runOne(t.Context(), "pg-advisory", "sale", nil, ld)
	if err != nil {
		t.Fatalf("the armed request's sold out did not excuse its hook's miss: %v", err)
	}
	if r.Armed["409"] != 1 {
		t.Errorf("armed answers %v, want the one 409", r.Armed)
	}
}
