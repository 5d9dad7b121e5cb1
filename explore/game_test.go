package explore_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/racebuild"
)

// shortest runs the search for name and returns its counterexample as
// moves.
func shortest(t *testing.T, name string) (explore.Target, explore.Result, []string) {
	t.Helper()
	tg, err := explore.Lookup(name)
	if err != nil {
		if tg, err = explore.LookupAny(name); err != nil { // a library
			t.Fatal(err)
		}
	}
	ex, err := explore.New(tg, explore.Config{Budget: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := ex.Run(context.Background())
	ex.Close()
	if r.Verdict == explore.None {
		t.Fatalf("%s: the search found nothing", name)
	}
	var moves []string
	for _, ch := range r.Schedule {
		moves = append(moves, explore.FormatMove(ch))
	}
	return tg, r, moves
}

func play(t *testing.T, tg explore.Target, clients int, moves []string) explore.Game {
	t.Helper()
	g, err := explore.Play(context.Background(), tg, clients, moves)
	if err != nil {
		t.Fatalf("play %v: %v", moves, err)
	}
	return g
}

// followShortest plays the explorer's shortest schedule for name move by
// move: every move is among those offered before it, the lock is not
// broken before the last, and the last gives the search's verdict. It
// returns the game after the last move.
func followShortest(t *testing.T, name string) (explore.Target, explore.Result, []string, explore.Game) {
	t.Helper()
	tg, r, moves := shortest(t, name)
	for i := range moves {
		g := play(t, tg, r.Clients, moves[:i])
		if g.Verdict != "" {
			t.Fatalf("broken after %d of %d moves: %s", i, len(moves), g.Verdict)
		}
		if !slices.ContainsFunc(g.Next, func(o explore.Option) bool { return o.Move == moves[i] }) {
			t.Fatalf("move %d %q not offered after %v: %+v", i+1, moves[i], moves[:i], g.Next)
		}
	}
	g := play(t, tg, r.Clients, moves)
	if g.Verdict != r.Verdict {
		t.Fatalf("after the %d moves %v: verdict %q, the search's %q", len(moves), moves, g.Verdict, r.Verdict)
	}
	return tg, r, moves, g
}

// A scripted game breaks check-del and del-setnx move by move, along the
// explorer's own counterexample: every move is among the moves offered
// before it, the lock is not broken before the last, and is after it.
func TestGameFollowsTheCounterexample(t *testing.T) {
	for _, name := range []string{"check-del", "del-setnx", "setnx"} {
		t.Run(name, func(t *testing.T) {
			_, _, moves, g := followShortest(t, name)
			// The step that breaks it is named: a client deletes the lock
			// another holds (check-del, del-setnx), or takes it while
			// another holds it.
			named := false
			for _, s := range g.Trace {
				named = named || strings.Contains(s.Note, "'s lock") || strings.Contains(s.Note, "holds it too")
			}
			if name != "setnx" && !named {
				t.Errorf("no step of %+v names the break", g.Trace)
			}
			t.Logf("%s: %s in %d moves: %s", name, g.Verdict, len(moves), strings.Join(moves, ", "))
		})
	}
}

// The same moves give the same state, every time.
func TestGameIsDeterministic(t *testing.T) {
	tg, r, moves := shortest(t, "check-del")
	first, _ := json.Marshal(play(t, tg, r.Clients, moves))
	for range 5 {
		again, _ := json.Marshal(play(t, tg, r.Clients, moves))
		if string(again) != string(first) {
			t.Fatalf("the same moves gave another state:\n%s\n%s", first, again)
		}
	}
}

// Bad moves are refused, naming the move and why.
func TestGameRefusesBadMoves(t *testing.T) {
	tg, _ := explore.Lookup("check-del")
	for _, c := range []struct {
		moves []string
		index int
		why   string
	}{
		{[]string{"Z"}, 0, "no client"},
		{[]string{"A", "D"}, 1, "no client"},
		{[]string{"A", "dance A"}, 1, "no move"},
		{[]string{"A", "crash A"}, 1, "this level has no "},
		{[]string{"A@m1"}, 0, "one Redis"},
		{[]string{"renew A"}, 0, "not possible here"},
		{[]string{"skew A"}, 0, "this level has no "},
		{[]string{strings.Repeat("A", 40)}, 0, "too long"},
		{make([]string, explore.MaxMoves+1), explore.MaxMoves, "at most"},
	} {
		_, err := explore.Play(context.Background(), tg, 2, c.moves)
		var me *explore.MoveError
		if !errors.As(err, &me) || me.Index != c.index || !strings.Contains(me.Reason, c.why) {
			t.Errorf("%v: got %v, want move %d refused with %q", c.moves, err, c.index+1, c.why)
		}
	}
	if _, err := explore.Play(context.Background(), tg, 4, nil); err == nil {
		t.Error("4 clients: no error")
	}
}

// A game on masters, whose attempts and releases fan out to three
// masters at once from a goroutine each, gives the same state every time
// its moves are replayed, move by move: each step ends when every
// goroutine of the client is accounted for (rounds.go), not when the
// goroutines look still. So do cohort's, whose requests pass the lock in
// memory, and the libraries' on one Redis (redsync, redislock,
// redislock-refresh), whose own timers run on the wall clock.
//
// Each replay of a prefix runs every move before it again (O(n²) moves a
// game), pure CPU that the race detector makes many times dearer: under
// -race each prefix is replayed once against its first play, which drives
// the same fan-out goroutines the detector watches; the pass without
// -race (make test-embedded RACE=) replays each five times.
func TestGameOnMastersReplaysIdentically(t *testing.T) {
	replays := 5
	if racebuild.Enabled {
		replays = 1
	}
	for _, name := range []string{"redlock", "redsync-redlock", "cohort", "redsync", "redislock", "redislock-refresh"} {
		// The games scripted played to pick each move are the first
		// time each prefix is played.
		tg, moves, games := scriptedGames(t, name, 50)
		states := make([]string, len(moves)+1)
		for k, g := range games {
			b, _ := json.Marshal(g)
			states[k] = string(b)
		}
		for range replays {
			for k := range states {
				b, _ := json.Marshal(play(t, tg, clientsOf(tg), moves[:k]))
				if string(b) != states[k] {
					t.Fatalf("%s: moves %v gave another state:\n%s\n%s", name, moves[:k], states[k], b)
				}
			}
		}
		t.Logf("%s: %d moves, each prefix the same state %d times", name, len(moves), replays+1)
	}
}

// The game offers the libraries on one Redis too (redsync, redislock,
// redislock-refresh: their own code, as the explorer runs it): the
// explorer's shortest schedule, played move by move, is offered move by
// move and breaks the library as the search judged it, and replays to
// the same state every time.
func TestGameBreaksTheLibraries(t *testing.T) {
	for _, name := range []string{"redsync", "redislock", "redislock-refresh"} {
		t.Run(name, func(t *testing.T) {
			tg, r, moves, g := followShortest(t, name)
			first, _ := json.Marshal(g)
			for range 3 {
				g := play(t, tg, r.Clients, moves)
				if g.Verdict != r.Verdict {
					t.Fatalf("after the %d moves %v: verdict %q, the search's %q", len(moves), moves, g.Verdict, r.Verdict)
				}
				if again, _ := json.Marshal(g); string(again) != string(first) {
					t.Fatalf("the same moves gave another state:\n%s\n%s", first, again)
				}
			}
			t.Logf("%s: %s in %d moves: %s", name, r.Verdict, len(moves), strings.Join(moves, ", "))
		})
	}
}
