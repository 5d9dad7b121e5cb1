package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockladder/lockladder/stack"
)

// chromium finds a headless-capable Chromium, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := stack.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestPageRacesInABrowser drives the page in a real headless Chromium, as
// a learner would: it races none and lua on /sale (the page's default
// picks) through the load balancer, and checks that the page shows
// OVERSOLD for none and SAFE for lua, from the verdicts the races read
// back, and that the comparison chart was drawn; then lua alone with the
// articles' wait (wait=fixed), still SAFE, listed beside them. The screenshot is saved
// in the test's artifact directory (go test -artifacts keeps it).
func TestPageRacesInABrowser(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)

	shoot := func() { screenshot(t, ctx, "page-race.png", "") }
	step := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(ctx, a); err != nil {
			shoot()
			status, _ := chromedp.Run(ctx, chromedp.Text("#raceStatus"))
			t.Fatalf("%s: %v (the page's status line: %q)", what, err, status)
		}
	}
	step("open the page", chromedp.Navigate(st.URL()+"/lab"))
	step("wait for the race button", chromedp.WaitVisible("#raceBtn"))
	step("set N", chromedp.SetValue("#n", "1500"))
	step("press race", click("#raceBtn"))
	// The page marks the body once its races are over, won or not.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.races !== undefined`, chromedp.WithPollingTimeout(150*time.Second))); err != nil {
		shoot()
		t.Fatalf("waiting for the races to end: %v", err)
	}
	// Then lua alone, waiting the articles' way (the wait picker).
	step("pick lua alone", chromedp.Evaluate[chromedp.Void](`document.querySelector('input[value=none]').checked = false; delete document.body.dataset.races`))
	step("pick wait=fixed", chromedp.SetValue("#wait", "fixed"))
	step("press race again", click("#raceBtn"))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.races !== undefined`, chromedp.WithPollingTimeout(150*time.Second))); err != nil {
		shoot()
		t.Fatalf("waiting for the second race to end: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#results tbody tr')].map(tr => tr.cells[0].innerText + ' ' + tr.cells[3].innerText + ' ' + tr.querySelector('.badge').innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	status, _ := chromedp.Run(ctx, chromedp.Text("#raceStatus"))
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const c = document.getElementById('cmpBad'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] && d[i-3] > 150 && d[i-2] < 100) n++; // red or orange bar pixels
		return n;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	shoot()
	t.Logf("results table: %q; status: %q", rows, status)
	want := []string{"none its own OVERSOLD", "lua its own SAFE", "lua fixed SAFE"}
	if !slices.Equal(rows, want) {
		t.Errorf("the page lists the races %q, want %q (status %q)", rows, want, status)
	}
	if drawn < 50 {
		t.Errorf("the oversold chart has %d red pixels: none's bar was not drawn", drawn)
	}

	// none on /testLock: its timeline shows the instances' sections, and
	// the overlaps among them, counted beside it; the first overlap is a
	// click away.
	step("pick none alone", chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('input[name=lock]').forEach(x => x.checked = x.value === 'none'); delete document.body.dataset.races`))
	step("pick testLock", chromedp.SetValue("#endpoint", "testLock"))
	step("pick each lock's own wait", chromedp.SetValue("#wait", ""))
	step("press race for none", click("#raceBtn"))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.races !== undefined`, chromedp.WithPollingTimeout(150*time.Second))); err != nil {
		shoot()
		t.Fatalf("waiting for none's race to end: %v", err)
	}
	overlaps, err := chromedp.Run(ctx, chromedp.Text("#timelineCard .tl-overlaps"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscanf(overlaps, "%d overlap", &n); err != nil || n < 1 {
		t.Errorf("beside the timeline: %q, want \"N overlaps\" with N >= 1", overlaps)
	}
	// A finished race's timeline opens zoomed on its evidence: the whole
	// race is a click away.
	step("show the whole race", click("#timelineCard .tl-all"))
	sections, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#timelineCard .tl-canvas').dataset.drawn`))
	red := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
			const c = document.querySelector('#timelineCard .tl-canvas'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
			let n = 0;
			for (let i = 0; i < d.length; i += 4) if (d[i] > 170 && d[i+1] < 90 && d[i+2] < 60) n++; // the overlaps' red
			return n;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if s, _ := strconv.Atoi(sections); s < 100 || red() < 200 {
		t.Errorf("the timeline drew %s sections, %d red pixels: want none's sections, overlapping", sections, red())
	}
	step("jump to the first overlap", click("#timelineCard .tl-first"))
	pair, _ := chromedp.Run(ctx, chromedp.Text("#timelineCard .tl-pair"))
	if !strings.HasPrefix(pair, "overlap 1 of ") || red() < 200 {
		t.Errorf("after first overlap: %q and %d red pixels, want the overlap zoomed on and said", pair, red())
	}
	if png, err := chromedp.Run(ctx, chromedp.Screenshot("#timelineCard")); err == nil {
		shot := filepath.Join(t.ArtifactDir(), "page-timeline-none.png")
		if os.WriteFile(shot, png, 0o644) == nil {
			t.Logf("screenshot: %s", shot)
		}
	}
	t.Logf("none on /testLock: %s, %s sections drawn; %s", overlaps, sections, pair)
}
