package race

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
)

// offlineServer is the race server with no stack behind it (its app URL
// refuses): enough for /play and /explore, which need none.
func offlineServer(t *testing.T) *httptest.Server {
	t.Helper()
	svc := New("http://127.0.0.1:1", nil)
	t.Cleanup(svc.Close)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return srv
}

func playPost(t *testing.T, url string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	if s, ok := body.(string); ok {
		b = []byte(s)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/play", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST /play: %s, body not JSON: %v", resp.Status, err)
	}
	return resp.StatusCode, out
}

// playHint asks for a hint after moves, again while the explorer says it
// is searching (hint_wait_ms), within the time it says it may take.
func playHint(t *testing.T, url, lock string, moves []string) map[string]any {
	t.Helper()
	deadline := time.Time{}
	for {
		status, g := playPost(t, url, map[string]any{"lock": lock, "moves": moves, "hint": true})
		if status != http.StatusOK {
			t.Fatalf("%s after %v: %d %v", lock, moves, status, g)
		}
		wait, searching := g["hint_wait_ms"].(float64)
		if !searching {
			return g
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(time.Duration(wait)*time.Millisecond + 5*time.Second)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the explorer still searching past the %v ms it said: %v", lock, wait, g["hint_note"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A learner breaks check-del over HTTP, one request a move, each carrying
// the game so far and taking a move the answer before offered; the hint
// leads along the explorer's shortest schedule; once broken, the answer
// says so and how short the shortest is, and the moves break the lock on
// a real redis-server too.
func TestPlayBreaksCheckDel(t *testing.T) {
	redistest.NeedServer(t, "redis-server") // the replay's
	srv := offlineServer(t)

	var moves []string
	for len(moves) <= 60 {
		g := playHint(t, srv.URL, "check-del", moves)
		if g["verdict"] == "OVERSOLD" {
			if int(g["shortest"].(float64)) != len(moves) {
				t.Errorf("broken in %d moves, shortest %v: following the hints is the shortest", len(moves), g["shortest"])
			}
			break
		}
		hint, _ := g["hint"].(string)
		offered := false
		for _, o := range g["next"].([]any) {
			offered = offered || o.(map[string]any)["move"] == hint
		}
		if hint == "" || !offered {
			t.Fatalf("after %v: hint %q not among the moves offered %v (%v)", moves, hint, g["next"], g["hint_note"])
		}
		moves = append(moves, hint)
	}
	if len(moves) != 12 {
		t.Errorf("check-del broken in %d moves, the explorer's shortest is 12", len(moves))
	}
	status, g := playPost(t, srv.URL, map[string]any{"lock": "check-del", "moves": moves, "replay": true})
	if status != http.StatusOK || g["replay"] != "reproduced" {
		t.Fatalf("replay on redis-server: %d %v", status, g["replay"])
	}
	// The same moves with the last one left out: not broken, and it does
	// not replay as broken either.
	status, g = playPost(t, srv.URL, map[string]any{"lock": "check-del", "moves": moves[:len(moves)-1], "replay": true})
	if status != http.StatusOK || g["verdict"] != nil || g["replay"] != nil {
		t.Fatalf("one move short: %d verdict %v replay %v", status, g["verdict"], g["replay"])
	}
}

// Bad games are refused with a 400 that says what, and change nothing.
func TestPlayRefuses(t *testing.T) {
	p := NewPlayer()
	srv := httptest.NewServer(New("http://127.0.0.1:1", nil))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		body   any
		status int
		want   string
	}{
		{map[string]any{"lock": "nope"}, 400, "cannot be played"},
		{map[string]any{"moves": []string{"A"}}, 400, "lock is required"},
		{map[string]any{"lock": "lua", "clients": 5}, 400, "out of range"},
		{map[string]any{"lock": "lua", "moves": []string{"A", "tick", "B", "Q"}}, 400, "move 4"},
		{map[string]any{"lock": "lua", "moves": []string{"A", "A", "crash A"}}, 400, "move 3"},
		{map[string]any{"lock": "lua", "moves": make([]string, 61)}, 400, "at most 60"},
		{map[string]any{"lock": "lua", "extra": 1}, 400, "unknown field"},
		{`{"lock":"lua"} {"lock":"lua"}`, 400, "one JSON object"},
		{`{"lock":"lua","moves":["` + strings.Repeat("A", 5000) + `"]}`, 400, "malformed"},
	} {
		status, body := playPost(t, srv.URL, c.body)
		if status != c.status || !strings.Contains(body["error"].(string), c.want) {
			t.Errorf("%v: %d %v, want %d with %q", c.body, status, body, c.status, c.want)
		}
	}
	// Another site's page starts nothing.
	status, body := playPost(t, srv.URL, map[string]any{"lock": "lua"}, "Sec-Fetch-Site", "cross-site")
	if status != http.StatusForbidden {
		t.Errorf("cross-site: %d %v", status, body)
	}
	// More games at once than MaxGames: a 429 with Retry-After.
	for range MaxGames {
		p.slots <- struct{}{}
	}
	psrv := httptest.NewServer(p)
	t.Cleanup(psrv.Close)
	req, _ := http.NewRequest(http.MethodPost, psrv.URL+"/play", strings.NewReader(`{"lock":"lua"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a game beyond %d at once: %s, Retry-After %q", MaxGames, resp.Status, resp.Header.Get("Retry-After"))
	}
}

// The game offers the libraries the explorer covers: GET /play lists a
// level for each, and a learner following the hints breaks each library
// on one Redis in the explorer's shortest number of moves, which break it
// on a real redis-server too.
func TestPlayOffersTheLibraries(t *testing.T) {
	redistest.NeedServer(t, "redis-server") // the replay's
	srv := offlineServer(t)
	resp, err := http.Get(srv.URL + "/play")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Levels []Level `json:"levels"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	offered := map[string]bool{}
	for _, l := range list.Levels {
		offered[l.Lock] = true
	}
	for _, name := range []string{"redsync", "redislock", "redislock-refresh", "redsync-redlock"} {
		if !offered[name] {
			t.Errorf("GET /play: no level for %s in %v", name, offered)
		}
	}
	for _, name := range []string{"redsync", "redislock", "redislock-refresh"} {
		var moves []string
		for len(moves) <= 20 {
			g := playHint(t, srv.URL, name, moves)
			if g["verdict"] == "OVERSOLD" {
				if int(g["shortest"].(float64)) != len(moves) {
					t.Errorf("%s broken in %d moves, shortest %v", name, len(moves), g["shortest"])
				}
				break
			}
			hint, _ := g["hint"].(string)
			if hint == "" {
				t.Fatalf("%s after %v: no hint (%v)", name, moves, g["hint_note"])
			}
			moves = append(moves, hint)
		}
		status, g := playPost(t, srv.URL, map[string]any{"lock": name, "moves": moves, "replay": true})
		if status != http.StatusOK || g["replay"] != "reproduced" {
			t.Errorf("%s: %v replayed on redis-server: %d %v", name, moves, status, g["replay"])
		}
		t.Logf("%s: OVERSOLD in %d moves (%s), reproduced on redis-server", name, len(moves), strings.Join(moves, ", "))
	}
}
