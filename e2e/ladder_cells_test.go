package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestLadderCellsFit draws the ladder's grid in a real headless Chromium
// at a desktop's 1280 and 1920 px and a phone's 390, in each of the
// states a cell can be in: waiting with the ladder's verdict ("want
// DEADLOCK"), waiting for a prediction ("predict ?"), and run with the
// longest content a run gives it (LOST UPDATES ✗, an overlap count in
// four digits, the learner's prediction marked), and fails for any of
// the grid's cells, headers or badges whose content is wider than its
// box (scrollWidth > clientWidth: text clipped, since the cells hide
// their overflow), naming them. Screenshots of each are kept.
func TestLadderCellsFit(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	// The first Run starts the browser on ctx itself (a timeout's end
	// would close it); the others each under a deadline.
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	eval := evaluator(t, ctx)
	// clipped lists what in the grid is wider than its box (the
	// screen-reader-only texts, 1 px by design, left out).
	const clipped = `(() => {
		const out = [];
		for (const el of document.querySelectorAll('#ladderGrid th, #ladderGrid td, #ladderGrid button, #ladderGrid .badge, #ladderGrid small')) {
			if (el.closest('.why, .sr') || el.getClientRects().length === 0) continue;
			if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== 'inline')
				out.push((el.closest('[data-pair]') || el).dataset.pair + ' ' + el.tagName.toLowerCase() + '.' + el.className +
					' ' + el.scrollWidth + '>' + el.clientWidth + ' "' + el.innerText.replace(/\s+/g, ' ').slice(0, 40) + '"');
		}
		return out.slice(0, 10).join('; ');
	})()`
	states := []struct{ name, js string }{
		{"want", `predict.ask = false; repaintLadder()`},
		{"predict", `predict.ask = true; predict.pairs = {}; repaintLadder()`},
		{"run", `predict.ask = true; for (const [pair, c] of Object.entries(ladder.cells)) {
			if (c.cell.skip) continue;
			c.entry = {verdict: 'LOST UPDATES', title: pair, timeline: {overlaps: 1234, refused: 0}};
			predict.pairs[pair] = {guess: 'SAFE', verdict: 'LOST UPDATES'};
		} repaintLadder()`},
	}
	for _, w := range []struct {
		width, height int
		mobile        bool
	}{{1280, 900, false}, {1920, 1080, false}, {390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{}
		if w.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		_, err := chromedp.Run(cctx, chromedp.EmulateViewport(int64(w.width), int64(w.height), opts...))
		if err == nil {
			_, err = chromedp.Run(cctx, chromedp.Navigate(st.URL()+"/lab"))
		}
		if err == nil {
			_, err = chromedp.Run(cctx, chromedp.Poll[bool](`!!document.querySelector('#ladderGrid [data-pair="normal none"] button')`,
				chromedp.WithPollingTimeout(30*time.Second)))
		}
		cancel()
		if err != nil {
			t.Fatalf("%d px: the ladder: %v", w.width, err)
		}
		for _, s := range states {
			eval(`(() => { ` + s.js + `; return '' })()`)
			name := fmt.Sprintf("ladder-%s-%d.png", s.name, w.width)
			screenshot(t, ctx, name, "#ladderCard")
			// redlock's row, two cells, up close
			screenshot(t, ctx, "row-"+name, `#ladderGrid tbody tr:has(td[data-pair="pause redlock"])`)
			if got := eval(clipped); got != "" {
				t.Errorf("%d px, cells %s: clipped: %s", w.width, s.name, got)
			}
		}
	}
}
