package race

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/explore"
)

// A counterexample comes with its replay token, and POST /explore with
// the token draws the same schedule again without a search: the same
// verdict, the same rows. A token is checked like any input: one not a
// token, out of its bounds, or whose steps the lock cannot take is
// refused with a reason, and nothing runs.
func TestExploreReplaysItsToken(t *testing.T) {
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)
	explored := func(q string) (int, ExploreResult, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/explore?"+q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatalf("POST /explore?%s: %s, body not JSON: %v", q, resp.Status, err)
		}
		var r ExploreResult
		var m map[string]any
		json.Unmarshal(raw, &r)
		json.Unmarshal(raw, &m)
		return resp.StatusCode, r, m
	}

	code, found, _ := explored("lock=check-del")
	if code != http.StatusOK || found.Verdict != explore.Oversold || !strings.HasPrefix(found.Token, "lc1:") {
		t.Fatalf("check-del: %d %s, token %q: want OVERSOLD with its token", code, found.Verdict, found.Token)
	}
	code, again, _ := explored("lock=check-del&token=" + url.QueryEscape(found.Token))
	if code != http.StatusOK || again.Verdict != found.Verdict || again.Steps != found.Steps || again.Token != found.Token {
		t.Fatalf("its token replayed: %d %s in %d steps, token %q; want %s in %d, the same token", code, again.Verdict, again.Steps, again.Token, found.Verdict, found.Steps)
	}
	if again.Schedules != 0 && again.Schedules != 1 {
		t.Errorf("the replay tried %d schedules: want the token's alone, no search", again.Schedules)
	}
	if !reflect.DeepEqual(again.Rows, found.Rows) {
		t.Errorf("the replay's rows differ from the search's:\n%+v\n%+v", again.Rows, found.Rows)
	}

	for _, c := range []struct{ q, reason string }{
		{"lock=check-del&token=nonsense", "bad_request"},
		{"lock=check-del&token=lc1:9:1:2000:crash:1:2:A", "bad_request"},                                  // 9 clients
		{"lock=check-del&token=lc1:2:1:2000:crash:1:2:" + strings.Repeat("A.", 300) + "A", "bad_request"}, // too long
		{"lock=check-del&token=lc1:2:1:99999999:crash:1:2:A", "bad_request"},                              // lease
		{"lock=check-del&lease_ms=100&token=" + url.QueryEscape(found.Token), "bad_request"},
		{"lock=check-del&token=lc1:2:1:2000:crash:1:2:xA.xB.A", "not_replayable"}, // crashed clients send nothing
	} {
		code, _, body := explored(c.q)
		want := http.StatusBadRequest
		if c.reason == "not_replayable" {
			want = http.StatusUnprocessableEntity
		}
		if code != want || body["reason"] != c.reason || body["error"] == "" {
			t.Errorf("POST /explore?%s: %d %v, want %d %s with why", c.q, code, body, want, c.reason)
		}
	}
}
