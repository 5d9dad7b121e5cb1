package race

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/explore"
)

// siteRung is a rung whose commands the page marks on its code: its
// file, and for each command the explorer draws, the call in that file
// that sends it.
type siteRung struct {
	lock, file string
	// calls maps a command's first word to the Go call that sends it,
	// in file, or in another file of lock/ as "file|call" (a Release the
	// rung shares with an earlier one).
	calls map[string]string
}

var siteRungs = []siteRung{
	{"check-del", "lock/rung05_check_del.go", map[string]string{"SET": "l.rdb.SetNX(", "GET": "l.rdb.Get(", "DEL": "l.rdb.Del("}},
	{"lua", "lock/rung06_lua.go", map[string]string{"SET": "l.rdb.SetNX(", "EVAL": "luaRelease.Run("}},
	{"setnx-expire", "lock/rung03_setnx_expire.go", map[string]string{"SET": "l.rdb.SetNX(", "PEXPIRE": "l.rdb.PExpire(", "DEL": "lock/rung02_setnx.go|return delReleased(l.rdb.Del("}},
}

// lineOf is the number of the one line of file (from the module's root)
// that holds call.
func lineOf(t *testing.T, file, call string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, call) {
			if found != 0 {
				t.Fatalf("%s: %q on lines %d and %d: the test needs it once", file, call, found, i+1)
			}
			found = i + 1
		}
	}
	if found == 0 {
		t.Fatalf("%s: no line holds %q", file, call)
	}
	return found
}

// checkSite says whether site, of a command sent on the lock key, is the
// line of r's file that sends it; a stock command's is in the sale's
// code (inventory), outside the rung.
func checkSite(t *testing.T, r siteRung, where, command string, site *explore.Site) {
	t.Helper()
	if site == nil {
		t.Errorf("%s %s: %q has no site", r.lock, where, command)
		return
	}
	words := strings.Fields(command)
	if len(words) < 2 || (words[1] != "lock" && !strings.HasPrefix(words[0], "EVAL")) {
		if !strings.HasPrefix(site.File, "inventory/") {
			t.Errorf("%s %s: %q sent from %s:%d, want the sale's code in inventory/", r.lock, where, command, site.File, site.Line)
		}
		return
	}
	call, ok := r.calls[words[0]]
	if !ok {
		t.Errorf("%s %s: %q: the test knows no call for %s", r.lock, where, command, words[0])
		return
	}
	file := r.file
	if f, c, ok := strings.Cut(call, "|"); ok {
		file, call = f, c
	}
	if want := lineOf(t, file, call); site.File != file || site.Line != want || !strings.HasPrefix(site.Func, "lock.") {
		t.Errorf("%s %s: %q sent from %s:%d (%s), want %s:%d, the line of %s", r.lock, where, command, site.File, site.Line, site.Func, file, want, call)
	}
}

// Each step of a rung's shortest schedule that is a command names the
// line of the rung's file in lock/ that sent it (the page marks it on
// the code), and a fault or time passing names none.
func TestExploreSites(t *testing.T) {
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)
	for _, r := range siteRungs {
		resp, err := http.Post(srv.URL+"/explore?lock="+r.lock, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var res ExploreResult
		err = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || res.Verdict == explore.None {
			t.Fatalf("/explore?lock=%s: %s, %v, verdict %q", r.lock, resp.Status, err, res.Verdict)
		}
		rungLines := 0
		for _, row := range res.Rows {
			command := row.Command != "" && !strings.HasPrefix(row.Command, "**")
			switch {
			case command:
				checkSite(t, r, "step "+row.Client, row.Command, row.Site)
				if row.Site != nil && row.Site.File == r.file {
					rungLines++
				}
			case row.Site != nil:
				t.Errorf("%s: row %+v is no command, yet names %s:%d", r.lock, row, row.Site.File, row.Site.Line)
			}
		}
		if rungLines == 0 {
			t.Errorf("%s: no step sent from %s: %+v", r.lock, r.file, res.Rows)
		}
	}
}

// A game's client names the line of the rung's code its next command
// comes from, and null when it has none waiting.
func TestPlaySites(t *testing.T) {
	srv := offlineServer(t)
	play := func(lock string, moves []string) PlayResult {
		t.Helper()
		b, _ := json.Marshal(PlayRequest{Lock: lock, Clients: 2, Moves: moves})
		resp, err := http.Post(srv.URL+"/play", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var g PlayResult
		if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/play %s %v: %s, %v", lock, moves, resp.Status, err)
		}
		return g
	}
	for _, r := range siteRungs {
		// Nobody has started: no command waits, and the site says so.
		b, _ := json.Marshal(play(r.lock, nil))
		if !strings.Contains(string(b), `"site":null`) {
			t.Errorf("%s: a client with no command waiting: want \"site\":null in %s", r.lock, b)
		}
		// A alone, move by move: its next command's line, each time.
		var moves []string
		for range 5 {
			g := play(r.lock, moves)
			a := g.Clients[0]
			if a.Site != nil || strings.HasPrefix(a.Next, "sends ") {
				checkSite(t, r, "client A after "+strings.Join(moves, ","), strings.TrimPrefix(a.Next, "sends "), a.Site)
			}
			for _, row := range g.Trace {
				if row.Client != "" && !strings.HasPrefix(row.Command, "**") {
					checkSite(t, r, "trace", row.Command, row.Site)
				}
			}
			moves = append(moves, "A")
		}
	}
}
