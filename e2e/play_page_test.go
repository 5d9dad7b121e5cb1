package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestPageBreakItYourself plays one game of "Break it yourself" in a real
// headless Chromium with the page's own controls and the keyboard alone:
// check-del's level, then, move by move, a hint asked and the move it
// names pressed, until the lock breaks: "Broken in N moves; the shortest
// known is N" (the hints follow the explorer's shortest schedule). Then
// the replay on the stack's real redis-server, which must say it happened
// there too; and after a reload the game is found again in the page's
// address. Every wait is polled from Go with a deadline, and every
// chromedp call after the first runs under a timeout of its own: a step
// that does not come fails the test, it never hangs it.
func TestPageBreakItYourself(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	// The first Run starts the browser on ctx itself (a timeout's end
	// would close it); the others each under a deadline.
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/lab")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	shoot := func() { screenshot(t, ctx, "page-play.png", "#playCard") }
	do := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(cctx, a); err != nil {
			shoot()
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := evaluator(t, ctx)
	// played waits for the game's state (body's data-played: lock, moves,
	// verdict, hint, replay) to start with want, and returns it.
	played := func(want string, d time.Duration) string {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			got := eval(`document.body.dataset.played || ''`)
			if strings.HasPrefix(got, want) {
				return got
			}
			if time.Now().After(deadline) {
				shoot()
				t.Fatalf("waiting %s for the game's state %q: it is %q (status %q)", d, want, got, eval(`document.getElementById('playStatus').innerText`))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// press focuses the one element the CSS selector sel names, forgets
	// the last state, and presses Enter on it, as a keyboard user does.
	// (A plain string selector would be searched with DOM.performSearch,
	// which also matches the text of the page's style sheet: hence CSS.)
	press := func(what, sel string) {
		t.Helper()
		do(what+": forget the last state", chromedp.Evaluate[chromedp.Void](`document.body.dataset.played = ''`))
		do(what+": focus", chromedp.Focus(chromedp.CSS(sel)))
		do(what+": Enter", chromedp.KeyEvent(kb.Enter))
	}

	pollJS(t, ctx, "the game's levels", `!!document.querySelector('#playLevels > button[data-lock="check-del"]')`, 30*time.Second)
	press("pick check-del", `#playLevels > button[data-lock="check-del"]`)
	played("check-del:0::", 20*time.Second)
	// a level picked with the keyboard keeps the focus in the game, on
	// its first move
	if f := eval(`document.activeElement.matches('#playMoves button') ? 'move' : document.activeElement.tagName + '#' + document.activeElement.id`); f != "move" {
		t.Errorf("after picking check-del's level the focus is on %s, want its first move", f)
	}
	// its brief names each source by its title once, not twice
	brief := eval(`document.getElementById('playBrief').innerText`)
	for _, title := range []string{`"Redis distributed lock"`, `"On the correct implementation of Redis distributed locks"`} {
		if n := strings.Count(brief, title); n != 1 {
			t.Errorf("check-del's brief names %s %d times: %q", title, n, brief)
		}
	}
	n := 0
	for ; n < 30; n++ {
		// the first hint searches for the shortest schedule: up to the
		// explorer's budget, on two cores shared
		press("ask for a hint", "#playHint")
		state := played(fmt.Sprintf("check-del:%d::", n), 90*time.Second)
		hint := strings.Split(state, ":")[3]
		if hint == "" || hint == "-" {
			t.Fatalf("no hint after %d moves: %q (status %q)", n, state, eval(`document.getElementById('playStatus').innerText`))
		}
		// the hint names its button by the button's own words, lights
		// it, and the focus is on it
		if lit := eval(fmt.Sprintf(`(() => { const b = document.querySelector('#playMoves button.hinted'); return b && b.dataset.move === %q && document.activeElement === b && document.getElementById('playStatus').innerText.includes('Hint: press \u201c' + b.innerText + '\u201d') ? 'lit' : (b ? b.dataset.move : 'none') + ' / ' + document.getElementById('playStatus').innerText; })()`, hint)); lit != "lit" {
			t.Errorf("the hint %q after %d moves: its button not lit, focused and named by its words: %s", hint, n, lit)
		}
		press("play "+hint, fmt.Sprintf(`#playMoves button[data-move=%q]`, hint))
		if s := played(fmt.Sprintf("check-del:%d:", n+1), 20*time.Second); strings.Contains(s, ":OVERSOLD:") {
			n++
			break
		}
	}
	status := eval(`document.getElementById('playStatus').innerText`)
	if want := fmt.Sprintf("Broken in %d moves; the shortest known is %d.", n, n); !strings.HasPrefix(status, want) || strings.Contains(status, "(s)") {
		t.Errorf("after following the hints: %q, want %q", status, want)
	}
	if solved := eval(`document.querySelector('#playLevels > button[data-lock="check-del"]').innerText`); !strings.Contains(solved, fmt.Sprintf("✓ %d moves", n)) {
		t.Errorf("check-del's level after the break says %q, want it marked solved in %d moves", solved, n)
	}
	// The replay on the stack's real redis-server.
	press("replay on redis-server", "#playReplayBtn")
	state := played(fmt.Sprintf("check-del:%d:OVERSOLD::", n), 90*time.Second)
	if !strings.HasSuffix(state, ":reproduced") {
		t.Errorf("the replay on redis-server: %q, want reproduced", state)
	}
	if r := eval(`document.getElementById('playReplay').innerText`); !strings.Contains(r, "it happened there too") {
		t.Errorf("the replay's line: %q", r)
	}
	shoot()
	t.Logf("check-del broken in %d moves, following the hints; %s", n, status)

	// The game is in the address: a reload finds it.
	do("reload", chromedp.Reload())
	played(fmt.Sprintf("check-del:%d:OVERSOLD", n), 30*time.Second)
}
