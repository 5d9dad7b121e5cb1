package race

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/lockladder/lockladder/internal/number"
)

// The HTTP plumbing the race service's answers share.

// count parses n= or c= of q: def when absent, else a whole number in
// [1, max] (package number: an empty n= is no default).
func count(q url.Values, name string, def, max int) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	x, err := number.Whole(name, q.Get(name), 1, int64(max))
	return int(x), err
}

// event writes one Server-Sent Event with v as JSON and flushes it; false
// when the reader has gone.
func event(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return false
	}
	rc.Flush()
	return r.Context().Err() == nil
}

// fail answers status with a JSON error and, when there is one, a reason
// code (contract's).
func fail(w http.ResponseWriter, status int, reason, msg string) {
	body := map[string]string{"error": msg}
	if reason != "" {
		body["reason"] = reason
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
