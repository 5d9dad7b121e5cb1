package race

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// POST /explore?lease_ms= runs the explorer's clients on the race's
// lease, so that the page's why? speaks in the race's figures; a lease
// out of range is a 400 that starts nothing.
func TestExploreTakesTheRacesLease(t *testing.T) {
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)

	resp, err := http.Post(srv.URL+"/explore?lock=setnx-px&lease_ms=200", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var r ExploreResult
	err = json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("lease_ms=200: %s, %v", resp.Status, err)
	}
	px := 0
	for _, row := range r.Rows {
		if strings.Contains(row.Command, "px 200") {
			px++
		}
	}
	if r.LeaseMS != 200 || px == 0 || r.Verdict != "OVERSOLD" {
		t.Errorf("lease_ms=200: lease %d ms, %d commands with px 200, verdict %s; want the race's lease in its commands (rows %+v)", r.LeaseMS, px, r.Verdict, r.Rows)
	}
	for _, bad := range []string{"0", "-5", "60001", "2s", "1e3"} {
		code, body := post(t, srv.URL+"/explore?lock=setnx-px&lease_ms="+bad)
		if msg, _ := body["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "lease_ms") {
			t.Errorf("lease_ms=%s: %d %v, want a 400 naming lease_ms", bad, code, body)
		}
	}
}
