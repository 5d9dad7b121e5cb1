package race

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/lock"
)

func post(t *testing.T, url string, header ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("POST %s: %s, body not JSON: %v", url, resp.Status, err)
	}
	return resp.StatusCode, body
}

// The race service answers /explore with the shortest counterexample of
// the rung's own code, as rows the page draws.
func TestExploreCounterexample(t *testing.T) {
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/explore?lock=setnx-px", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("POST /explore?lock=setnx-px: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var r ExploreResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Lock != "setnx-px" || r.Verdict != explore.Oversold || r.Steps == 0 || r.Schedules == 0 || r.Oversold < 1 {
		t.Fatalf("result %+v, want setnx-px OVERSOLD with steps, schedules and the oversold count", r)
	}
	if len(r.Columns) != r.Clients+1 || r.Columns[0] != "A" || r.Columns[len(r.Columns)-1] != "Redis" {
		t.Errorf("columns %v for %d clients, want A.. then Redis", r.Columns, r.Clients)
	}
	if len(r.Rows) < r.Steps {
		t.Fatalf("%d rows for %d steps", len(r.Rows), r.Steps)
	}
	holds, passes := 0, 0
	for i, row := range r.Rows {
		if row.N != i+1 {
			t.Errorf("row %d numbered %d", i, row.N)
		}
		if row.Client == "" {
			passes++
		} else if row.Command == "" || row.Lock == "" || !strings.Contains(row.Stock, "/") {
			t.Errorf("row %d %+v lacks its command, lock or stock/sold", i, row)
		}
		if strings.HasPrefix(row.Note, "holds the lock") {
			holds++
		}
	}
	if holds < 2 || passes == 0 {
		t.Errorf("rows %+v: %d took the lock, time passed %d times; want two holders and time passing", r.Rows, holds, passes)
	}
	if last := r.Rows[len(r.Rows)-1]; last.Stock == r.Rows[0].Stock {
		t.Errorf("the last row's stock/sold %q is the first's: nothing sold", last.Stock)
	}

	// GET names the rungs that can be explored.
	resp2, err := http.Get(srv.URL + "/explore")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var list struct{ Locks []string }
	json.NewDecoder(resp2.Body).Decode(&list)
	if !strings.Contains(strings.Join(list.Locks, ","), "setnx-px") {
		t.Errorf("GET /explore: %v, want setnx-px among the locks", list.Locks)
	}
}

// Redlock is on the page too, on PageMasters masters: its pause found,
// each master's command and the lock on each in the rows. The search is
// bounded by depth (9 steps, 2 clients: the counterexample's), not by the
// page's 20s budget: under -race on two loaded cores that budget reached
// depth 8 only, and how fast a search goes is a benchmark's question.
func TestExploreRedlockOnMasters(t *testing.T) {
	e := NewExplorer()
	e.run = func(ctx context.Context, tg explore.Target, cfg explore.Config) explore.Result {
		cfg.MaxClients, cfg.Depth, cfg.Budget = 2, 9, 10*time.Minute
		return search(ctx, tg, cfg)
	}
	s := New("http://127.0.0.1:1", nil)
	s.Explore = e
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	code, body := post(t, srv.URL+"/explore?lock=redlock")
	if code != http.StatusOK {
		t.Fatalf("POST /explore?lock=redlock: %d %v", code, body)
	}
	raw, _ := json.Marshal(body)
	var r ExploreResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != explore.Oversold || r.Masters != explore.PageMasters || r.Clients != 2 {
		t.Fatalf("redlock: %s on %d masters, %d clients (%s); want %s on %d masters, 2 clients",
			r.Verdict, r.Masters, r.Clients, r.Covered, explore.Oversold, explore.PageMasters)
	}
	if want := "masters m1-m3"; r.Columns[len(r.Columns)-1] != want {
		t.Errorf("columns %v, want the last %q", r.Columns, want)
	}
	onMaster, paused := 0, false
	for _, row := range r.Rows {
		if strings.HasPrefix(row.Command, "m") && strings.Contains(row.Command, ": SET lock") {
			onMaster++
		}
		paused = paused || strings.Contains(row.Command, "pauses")
		if row.Client != "" && len(strings.Fields(row.Lock)) < explore.PageMasters {
			t.Errorf("row %d: lock %q, want the key on each of %d masters", row.N, row.Lock, explore.PageMasters)
		}
	}
	if onMaster < 2*lock.Quorum(explore.PageMasters) || !paused {
		t.Errorf("rows %+v: %d SETs on masters and pause %v; want both clients' quorum and a pause", r.Rows, onMaster, paused)
	}
}

// A safe rung says what its search covered.
func TestExploreNoneCovers(t *testing.T) {
	e := &Explorer{Budget: time.Second}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	code, body := post(t, srv.URL+"/explore?lock=fenced")
	if code != http.StatusOK || body["verdict"] != explore.None || !strings.Contains(body["covered"].(string), "schedules in") {
		t.Errorf("POST /explore?lock=fenced: %d %v, want none with what it covered", code, body)
	}
}

func TestExploreRefuses(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	e := &Explorer{run: func(ctx context.Context, tg explore.Target, _ explore.Config) explore.Result {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return explore.Result{Target: tg.Name, Verdict: explore.None}
	}}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	for _, c := range []struct {
		q     string
		named bool // the error names the explorable locks
	}{
		{"", true}, {"lock=", true}, {"lock=nosuch", true}, {"lock=cohort-carry", true}, {"lock=zookeeper", true},
		{"lock=lua&lock=lua", false}, {"lock=lua&depth=3", false}, {"%zz", false},
	} {
		code, body := post(t, srv.URL+"/explore?"+c.q)
		msg, _ := body["error"].(string)
		if code != http.StatusBadRequest || msg == "" {
			t.Errorf("POST /explore?%s: %d %v, want a 400 that says why", c.q, code, body)
		} else if c.named && !strings.Contains(msg, "setnx-px") {
			t.Errorf("POST /explore?%s: %q, want the explorable locks named", c.q, msg)
		}
	}
	for _, site := range []string{"cross-site", "same-site"} {
		if code, body := post(t, srv.URL+"/explore?lock=lua", "Sec-Fetch-Site", site); code != http.StatusForbidden {
			t.Errorf("POST /explore with Sec-Fetch-Site: %s: %d %v, want 403", site, code, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/explore?lock=lua", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT /explore: %s, want 405", resp.Status)
	}
	select {
	case <-started:
		t.Fatal("a refused request started an exploration")
	default:
	}

	// One at a time: a second while the first runs is a 409.
	first := make(chan int, 1)
	go func() {
		code, _ := post(t, srv.URL+"/explore?lock=lua")
		first <- code
	}()
	<-started
	if code, body := post(t, srv.URL+"/explore?lock=setnx"); code != http.StatusConflict || body["reason"] != "run_in_progress" {
		t.Errorf("a second exploration while one runs: %d %v, want 409 run_in_progress", code, body)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first exploration: %d, want 200", code)
	}
	// and once it is done, the next may run.
	if code, _ := post(t, srv.URL+"/explore?lock=setnx"); code != http.StatusOK {
		t.Errorf("an exploration after the first: %d, want 200", code)
	}
}
