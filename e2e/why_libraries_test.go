package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lockladder/lockladder/explore"
)

// TestPageWhyForTheLibraries races each library the explorer covers
// (explore.Libraries: redsync, redislock, redislock-refresh) on the page
// in a real headless Chromium, and presses the why? beside its race's
// result with the keyboard: the stack's explorer runs the library's own
// code and the page draws its shortest counterexample, OVERSOLD, told
// with the race's instances.
func TestPageWhyForTheLibraries(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/lab")); err != nil {
		t.Fatal(err)
	}
	eval := evaluator(t, ctx)
	pollJS(t, ctx, "the race button", `!!document.getElementById('raceBtn')`, 30*time.Second)
	for i, l := range explore.Libraries {
		lock := l.Name
		// a short race on plain load: its row in the results, its why? beside
		rctx, rcancel := context.WithTimeout(ctx, 120*time.Second)
		v, err := chromedp.Run(rctx, chromedp.Evaluate[string](fmt.Sprintf(`raceOnce(%q, 'sale', {n: 200, c: 20}).then(e => e ? e.verdict : 'failed: ' + document.getElementById('raceStatus').textContent)`, lock), chromedp.EvalAwaitPromise))
		rcancel()
		if err != nil || strings.HasPrefix(v, "failed") {
			t.Fatalf("%s's race: %s %v", lock, v, err)
		}
		why := fmt.Sprintf(`#results tbody tr:nth-child(%d) button.why[data-lock=%q]`, i+1, lock)
		pollJS(t, ctx, lock+"'s why? beside its result", fmt.Sprintf(`!!document.querySelector(%q)`, why), 30*time.Second)
		if name := eval(fmt.Sprintf(`document.querySelector(%q).getAttribute('aria-label')`, why)); !strings.Contains(name, lock) {
			t.Errorf("%s's why? is named %q", lock, name)
		}
		eval(`(() => { delete document.body.dataset.explored; return ''; })()`)
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err = chromedp.Run(cctx, chromedp.Focus(chromedp.CSS(why)))
		if err == nil {
			_, err = chromedp.Run(cctx, chromedp.KeyEvent(kb.Enter))
		}
		cancel()
		if err != nil {
			t.Fatalf("press %s's why?: %v", lock, err)
		}
		pollJS(t, ctx, lock+"'s counterexample", fmt.Sprintf(`document.body.dataset.explored === %q`, lock), 120*time.Second)
		verdict := eval(`document.getElementById('exploreVerdict').innerText`)
		status := eval(`document.getElementById('exploreStatus').innerText`)
		steps := eval(`String(document.querySelectorAll('#exploreDiagram tbody tr').length)`)
		if !strings.HasPrefix(verdict, "OVERSOLD") || !strings.Contains(status, "app1") || steps == "0" {
			t.Errorf("%s's why?: verdict %q, status %q, %s steps; want its OVERSOLD counterexample told with the instances' names", lock, verdict, status, steps)
		}
		t.Logf("%s (raced: %s): %s; %s steps", lock, v, verdict, steps)
		screenshot(t, ctx, "why-"+lock+".png", "#exploreCard")
	}
}
