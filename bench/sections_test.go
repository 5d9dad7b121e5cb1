package bench_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
)

// An instance answers GET /sections a page at a time (the app: at most
// handlers.MaxSections): the bench asks from each page's next until the
// last, and counts the overlaps across pages.
func TestSectionsReadPageByPage(t *testing.T) {
	rec := contract.NewRecorder(100)
	base := time.Now().Add(time.Hour).UnixNano() // after the run begins
	for i := range int64(10) {
		s := contract.Section{Lock: "atomic", Key: "k", Acquired: base + i*10, Released: base + i*10 + 5, Wrote: true}
		if i == 4 {
			s.Released = base + 100 // still held while 5 to 9 begin and write
		}
		rec.Add(s)
		rec.Add(contract.Section{Lock: "lua", Key: "k", Acquired: base + i*10 + 1, Released: base + i*10 + 2, Wrote: true})
	}
	pages := 0
	inst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/sections" {
			http.NotFound(w, r)
			return
		}
		pages++
		since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
		p := rec.Since(since, 3)
		writeJSON(w, http.StatusOK, map[string]any{"complete": true, "sections": p.Sections, "next": p.Next})
	}))
	t.Cleanup(inst.Close)

	f := &fakeApp{strategies: []string{"atomic"}}
	srv := f.start(t)
	cfg := small(srv.URL)
	cfg.Instances = []string{inst.URL}
	row, err := bench.RunOne(t.Context(), cfg, "atomic", "sale")
	if err != nil {
		t.Fatal(err)
	}
	if row.Sections != 10 || row.Overlaps != 5 {
		t.Errorf("sections %d, overlaps %d: want atomic's 10 sections, 5 overlapping", row.Sections, row.Overlaps)
	}
	if pages != 7 {
		t.Errorf("%d pages asked, want 7 (20 sections, 3 a page)", pages)
	}
}
