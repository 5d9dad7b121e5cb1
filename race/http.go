package race

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// The HTTP plumbing the race service's answers share.

// count parses n= or c=: def when absent, else a whole number in [1, max].
func count(v string, def, max int) (int, error) {
	if v == "" {
		return def, nil
	}
	x, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", truncate(v, 32))
	}
	if x < 1 || x > max {
		return 0, fmt.Errorf("%d is out of range [1, %d]", x, max)
	}
	return x, nil
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
