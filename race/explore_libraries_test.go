package race

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/explore"
)

// The page's why? offers the libraries the explorer covers, beside
// their race results: GET /explore names them, and POST /explore runs
// their own code (explore.Libraries) to its shortest counterexample, on
// the race's lease, as it does the lab's rungs. Redlock stays the page's,
// on three masters.
func TestExploreOffersTheLibraries(t *testing.T) {
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/explore")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Locks []string }
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(explore.Libraries) == 0 {
		t.Fatal("explore.Libraries is empty: nothing to offer")
	}
	for _, l := range explore.Libraries {
		if !slices.Contains(list.Locks, l.Name) {
			t.Errorf("GET /explore names %q, not the library %s", list.Locks, l.Name)
		}
	}
	for _, l := range explore.Libraries {
		t.Run(l.Name, func(t *testing.T) {
			code, body := post(t, srv.URL+"/explore?lock="+l.Name+"&lease_ms=200")
			if code != http.StatusOK {
				t.Fatalf("POST /explore?lock=%s: %d %v", l.Name, code, body)
			}
			rows, _ := body["rows"].([]any)
			if body["lock"] != l.Name || body["verdict"] != explore.Oversold || len(rows) == 0 {
				t.Fatalf("POST /explore?lock=%s: lock %v, verdict %v, %d rows; want its own OVERSOLD counterexample", l.Name, body["lock"], body["verdict"], len(rows))
			}
			// told on the race's lease: 200 ms, not the explorer's 2 s
			var cmds []string
			for _, r := range rows {
				if c, _ := r.(map[string]any)["command"].(string); c != "" {
					cmds = append(cmds, c)
				}
			}
			if all := strings.Join(cmds, "|"); !strings.Contains(all, "200") {
				t.Errorf("%s's commands %q: want the race's 200 ms lease in them", l.Name, all)
			}
		})
	}
	if tg, err := lookup("redlock"); err != nil || tg.Masters != explore.PageMasters {
		t.Errorf("lookup(redlock): %d masters, %v; want the page's %d", tg.Masters, err, explore.PageMasters)
	}
}
