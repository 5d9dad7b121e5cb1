package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockladder/lockladder/internal/redistest"
)

// evaluator returns eval: js evaluated in ctx's page, its string value.
// The test fails on an error, or when no answer comes within a minute: a
// page that stops answering fails the test, it never hangs it. Call it
// once the browser runs (a Run on ctx itself started it).
func evaluator(t *testing.T, ctx context.Context) func(js string) string {
	return func(js string) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		v, err := chromedp.Run(cctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
}

// browser starts a headless Chromium for t, closed when t ends, and
// returns its context; without one t skips (fails under CI=true).
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromium()
	if bin == "" {
		if redistest.CI() {
			t.Fatal("chromium not found on PATH: under CI=true the page tests need it (apt-get install chromium)")
		}
		t.Skip("chromium not found on PATH: install Debian's chromium to drive the page in a real browser")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.WindowSize(1280, 1800),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium keeps its singleton socket in a directory of its own
		// under TMPDIR, and a browser the test ends by a kill never
		// removes it: each run left a dozen in /tmp. Here it goes with
		// the test's own.
		chromedp.Env("TMPDIR="+t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// The first Run starts the browser for the context's life: no timeout
	// on it; each wait is bounded on its own.
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// screenshot keeps a screenshot of sel ("": the whole page) as name in
// t's artifact directory (go test -artifacts keeps it).
func screenshot(t *testing.T, ctx context.Context, name, sel string) {
	t.Helper()
	var png []byte
	var err error
	// Bounded: a screenshot is taken when a test ends or fails, and must
	// not hang it. sel is CSS: a plain string would be searched with
	// DOM.performSearch, which matches text too, such as "#playCard" in
	// page/lab_play.js's querySelectorAll('#playCard button'): a text node
	// inside a script, never visible, waited for without end. (This hung
	// the game's browser test after its moves, where it shot #playCard.)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if sel == "" {
		png, err = chromedp.Run(sctx, chromedp.FullScreenshot(100))
	} else {
		png, err = chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS(sel)))
	}
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	shot := filepath.Join(t.ArtifactDir(), name)
	if os.WriteFile(shot, png, 0o644) == nil {
		t.Logf("screenshot: %s", shot)
	}
}

// canvasPixels counts the pixels of the canvas sel whose colour is
// within 40 of r, g, b.
func canvasPixels(t *testing.T, ctx context.Context, sel string, r, g, b int) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`(() => {
		const c = document.querySelector(%q), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4)
			if (Math.abs(d[i]-%d) < 40 && Math.abs(d[i+1]-%d) < 40 && Math.abs(d[i+2]-%d) < 40) n++;
		return n;
	})()`, sel, r, g, b)))
	if err != nil {
		t.Fatalf("counting %s's pixels: %v", sel, err)
	}
	return n
}

// click presses sel once the page has stopped scrolling. The page scrolls
// smoothly to what a press opens (the explorer's card, a timeline), and a
// press while it moves lands where sel was a moment before: a person
// waits for it, and so does the test.
func click(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[chromedp.Void](`delete window.__lastScrollY`)(ctx, t); err != nil {
			return chromedp.Void{}, err
		}
		// Still: the same scroll offset two looks, 100 ms apart.
		if _, err := chromedp.Poll[bool](`(() => {
			const y = window.scrollY, same = window.__lastScrollY === y;
			window.__lastScrollY = y;
			return same;
		})()`, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))(ctx, t); err != nil {
			return chromedp.Void{}, fmt.Errorf("the page did not stop scrolling: %w", err)
		}
		return chromedp.Click(chromedp.CSS(sel))(ctx, t) // CSS: see screenshot
	}
}
