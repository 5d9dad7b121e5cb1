package explore

import (
	"context"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/lockcheck/engine"
)

// A game's move names the script it sends, even before Redis has loaded
// it, and says in words what the script and a plain command do.
func TestMovesSayWhatTheyAsk(t *testing.T) {
	tg, err := Lookup("lua")
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	seen := map[string]bool{}
	for range 20 {
		g, err := engine.Play(context.Background(), tg, 2, moves)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Next) == 0 {
			break
		}
		for _, o := range g.Next {
			seen[o.Label] = true
		}
		moves = append(moves, g.Next[0].Move)
	}
	var release, get bool
	for l := range seen {
		if strings.Contains(l, "script-") {
			t.Errorf("a move names a script by its digest: %q", l)
		}
		release = release || strings.Contains(l, "EVAL lua-release lock A1 (delete the lock only if it is still its own, in one step)")
		get = get || strings.Contains(l, "GET stock (read the stock)")
	}
	if !release || !get {
		t.Errorf("the moves %v: want lua's release and the sale's GET said in words", seen)
	}
}
