package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A learner breaks check-del on the page, asking for a hint before each
// move and playing it, with the keyboard alone, sees "broken in
// 12 moves; the shortest known is 12", replays the moves on the stack's
// real redis-server, and finds the game again after a reload: the moves
// are in the page's address, nothing is kept on the server.
func TestPageBreakItYourself(t *testing.T) {
	ctx := browser(t)
	st := startStack(t)
	shoot := func() { screenshot(t, ctx, "page-play.png", "#playCard") }
	played := func(want string) string {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		got, err := chromedp.Run(pctx, chromedp.Poll[string](fmt.Sprintf(`(document.body.dataset.played || '').startsWith(%q) && document.body.dataset.played`, want),
			chromedp.WithPollingTimeout(60*time.Second)))
		if err != nil {
			shoot()
			status, _ := chromedp.Run(ctx, chromedp.Text("#playStatus"))
			t.Fatalf("waiting for %q: %v (status %q)", want, err, status)
		}
		return got
	}
	// run does what, once the page's last answer is forgotten: played
	// then waits for the answer to this one.
	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.body.dataset.played = ''`)); err != nil {
			t.Fatal(err)
		}
		actx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if _, err := chromedp.Run(actx, a); err != nil {
			shoot()
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The first Run starts the browser on ctx itself: not under a timeout,
	// whose end would close it.
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	run("wait for the levels", chromedp.WaitVisible(chromedp.CSS(`#playLevels > button`)))
	run("pick check-del", press(`#playLevels > button[aria-label^="level 4: break check-del"]`))
	played("check-del:0::")
	for n := 0; n < 20; n++ {
		run("ask for a hint", press("#playHint"))
		state := played(fmt.Sprintf("check-del:%d::", n))
		hint := strings.Split(state, ":")[3]
		t.Logf("after %d moves: %s", n, state)
		if hint == "" || hint == "-" {
			t.Fatalf("no hint after %d moves: %s", n, state)
		}
		sel := fmt.Sprintf(`#playMoves button[data-move=%q]`, hint)
		run("play "+hint, press(sel))
		if s := played(fmt.Sprintf("check-del:%d:", n+1)); strings.Contains(s, "OVERSOLD") {
			if n+1 != 12 {
				t.Errorf("broken in %d moves, following the hints: want the shortest, 12", n+1)
			}
			break
		}
	}
	status, _ := chromedp.Run(ctx, chromedp.Text("#playStatus"))
	if !strings.Contains(status, "Broken in 12 moves; the shortest known is 12") {
		t.Errorf("status %q", status)
	}
	run("replay on redis-server", press("#playReplayBtn"))
	played("check-del:12:OVERSOLD::reproduced")
	shoot()
	run("reload", chromedp.Reload())
	played("check-del:12:OVERSOLD")
}

// press focuses the one element sel (a CSS selector) names and presses
// Enter on it, as a keyboard user does: no mouse to land where a button
// was before the page moved it. (The page's style sheet holds selectors
// such as "#playLevels button" as text, which chromedp's default search
// would find first: hence CSS.)
func press(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Focus(chromedp.CSS(sel))(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		return chromedp.KeyEvent("\r")(ctx, t)
	}
}
