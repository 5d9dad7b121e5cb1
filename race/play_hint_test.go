package race

import (
	"strings"
	"testing"
)

// A hint on a level nobody has searched yet answers at once: that the
// explorer is searching and for how long at most, not after the search
// (fair's runs to its budget: it finds nothing). Asked again once the
// search is done, it says in words what the search tried.
func TestHintOnAColdLevel(t *testing.T) {
	srv := offlineServer(t)

	status, g := playPost(t, srv.URL, map[string]any{"lock": "fair", "moves": []string{}, "hint": true})
	if status != 200 {
		t.Fatalf("hint on fair: %d %v", status, g)
	}
	wait, _ := g["hint_wait_ms"].(float64)
	note, _ := g["hint_note"].(string)
	if wait <= 0 || !strings.Contains(note, "searching") || !strings.Contains(note, "at most") {
		t.Fatalf("a cold level's hint: wait %v, note %q; want it to say it is searching and for how long", wait, note)
	}
	if wait > float64(hintSafeBudget.Milliseconds()+1000) {
		t.Errorf("hint_wait_ms %v past the search's budget %v", wait, hintSafeBudget)
	}
	g = playHint(t, srv.URL, "fair", []string{})
	note, _ = g["hint_note"].(string)
	if g["hint"] != nil || !strings.HasPrefix(note, "No hint: fair should hold.") || !strings.Contains(note, "none broke it") {
		t.Errorf("fair once searched: hint %v, note %q", g["hint"], note)
	}
	for _, jargon := range []string{"depth", "states", "schedules", "faults "} {
		if strings.Contains(note, jargon) {
			t.Errorf("fair's note says %q: %q", jargon, note)
		}
	}
}

// A hint names the move by its button's words (the label of the move it
// names among those offered) and says why in one sentence.
func TestHintNamesTheButton(t *testing.T) {
	srv := offlineServer(t)

	moves := []string{}
	for range 6 {
		g := playHint(t, srv.URL, "setnx-px", moves)
		hint, _ := g["hint"].(string)
		label, _ := g["hint_label"].(string)
		why, _ := g["hint_why"].(string)
		text, _ := g["hint_text"].(string)
		offered := ""
		for _, o := range g["next"].([]any) {
			if o := o.(map[string]any); o["move"] == hint {
				offered = o["label"].(string)
			}
		}
		if hint == "" || label == "" || label != offered {
			t.Fatalf("after %v: hint %q labelled %q, the button for it says %q", moves, hint, label, offered)
		}
		if !strings.Contains(text, "\u201c"+label+"\u201d") || !strings.Contains(text, why) {
			t.Errorf("after %v: hint text %q, want the button's words %q and why %q", moves, text, label, why)
		}
		if strings.Count(strings.TrimSuffix(why, "."), ". ") > 0 || !strings.HasSuffix(why, ".") {
			t.Errorf("after %v: why %q: want one sentence", moves, why)
		}
		moves = append(moves, hint)
	}
}

// The game says what is true of its lock: setnx has no lease (lease_ms
// 0, and says so), and a client that crashed holding it leaves a key
// nobody alive holds, which the game never calls free.
func TestPlayTellsTheTruth(t *testing.T) {
	srv := offlineServer(t)

	status, g := playPost(t, srv.URL, map[string]any{"lock": "setnx", "clients": 2, "moves": []string{"A", "A", "crash A"}})
	if status != 200 {
		t.Fatalf("setnx, A takes the lock and crashes: %d %v", status, g)
	}
	if g["lease_ms"].(float64) != 0 || !strings.HasPrefix(g["lease"].(string), "no lease") {
		t.Errorf("setnx: lease_ms %v, lease %q; want 0 and no lease", g["lease_ms"], g["lease"])
	}
	now := g["lock_now"].(string)
	if strings.Contains(now, "nobody holds") || !strings.Contains(now, "no TTL") || !strings.Contains(now, "A crashed") {
		t.Errorf("setnx after A crashed holding the lock: lock_now %q", now)
	}
	for _, c := range g["clients"].([]any) {
		c := c.(map[string]any)
		if d, _ := c["doing"].(string); d == "" || strings.HasPrefix(d, "in ") {
			t.Errorf("client %v: doing %q", c["name"], d)
		}
	}
	status, g = playPost(t, srv.URL, map[string]any{"lock": "lua", "clients": 2, "moves": []string{"A", "A"}})
	if status != 200 || g["lease_ms"].(float64) <= 0 || !strings.HasPrefix(g["lease"].(string), "a lease of ") {
		t.Errorf("lua: %d lease_ms %v lease %q", status, g["lease_ms"], g["lease"])
	}
	if now := g["lock_now"].(string); !strings.HasPrefix(now, "A holds the lock") || !strings.Contains(now, "expires in") {
		t.Errorf("lua, A holding: lock_now %q", now)
	}
	// On the course the game is played on its step's race's lease (slow's
	// 200 ms), so that the two tell the same lease.
	status, g = playPost(t, srv.URL, map[string]any{"lock": "lua", "clients": 2, "moves": []string{"A", "A"}, "lease_ms": 200})
	if status != 200 || g["lease_ms"].(float64) != 200 || !strings.HasPrefix(g["lease"].(string), "a lease of 200 ms") {
		t.Errorf("lua on slow's lease: %d lease_ms %v lease %q, want 200 ms", status, g["lease_ms"], g["lease"])
	}
	if now := g["lock_now"].(string); !strings.Contains(now, "expires in 200") {
		t.Errorf("lua on a 200 ms lease, A holding: lock_now %q", now)
	}
	// a lease no scenario grants is refused: each one is a search of its own
	if status, g = playPost(t, srv.URL, map[string]any{"lock": "lua", "moves": []string{}, "lease_ms": 1234}); status != 400 {
		t.Errorf("lua on a lease of 1234 ms: %d %v, want 400", status, g)
	}
}

// A pause says the holder's watchdog freezes with it only where the
// lock runs one: reentrant's does, redlock's holder has none.
func TestPauseSaysAWatchdogOnlyWhereOneRuns(t *testing.T) {
	srv := offlineServer(t)

	for lock, watchdog := range map[string]bool{"reentrant": true, "redlock": false} {
		moves, label := []string{}, ""
		for range 12 {
			g := playHint(t, srv.URL, lock, moves)
			for _, o := range g["next"].([]any) {
				if o := o.(map[string]any); strings.HasPrefix(o["move"].(string), "pause") {
					label = o["label"].(string)
				}
			}
			hint, _ := g["hint"].(string)
			if label != "" || hint == "" {
				break
			}
			moves = append(moves, hint)
		}
		if label == "" {
			t.Fatalf("%s: no pause offered along the hints %v", lock, moves)
		}
		if strings.Contains(label, "watchdog") != watchdog {
			t.Errorf("%s's pause says %q: a watchdog %v, want %v", lock, label, !watchdog, watchdog)
		}
	}
}
