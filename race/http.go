package race

import (
	"encoding/json"
	"errors"
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

// fail answers status with a JSON error and a reason code (contract's;
// "" for the status's own: bad_request, not_found, ...).
func fail(w http.ResponseWriter, status int, reason, msg string) {
	failWith(w, status, reason, msg, "")
}

// failErr is fail with err's message, naming the parameter when err is a
// number's (internal/number).
func failErr(w http.ResponseWriter, status int, reason string, err error) {
	var ne *number.Error
	param := ""
	if errors.As(err, &ne) {
		param = ne.Param
	}
	failWith(w, status, reason, err.Error(), param)
}

// statusReasons are the reasons of the answers that give none of their
// own, as the app's.
var statusReasons = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestEntityTooLarge: "too_large",
}

func failWith(w http.ResponseWriter, status int, reason, msg, param string) {
	if reason == "" {
		reason = statusReasons[status]
	}
	if reason == "" {
		reason = "failed"
	}
	body := map[string]string{"error": msg, "reason": reason}
	if param != "" {
		body["param"] = param
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
