package e2e

import (
	"math"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lockladder/lockladder/suite"
)

// The page draws every failure: setnx under crash shows its stuck lock
// (a dark red strip to the end of the race, key and "no TTL"), and so
// does setnx-expire under crash-before-expire, whose holder died before
// its section began; a
// failing verdict never sits beside a green badge; del-setnx under
// crash-wait shows its double grant as overlapping sections (red), though
// the instances that held them crashed; lua under slow, its leases that
// ran out while held. Screenshots kept as artifacts.
func TestPageDrawsEveryFailure(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/lab")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#raceBtn")); err != nil {
		t.Fatal(err)
	}
	run := func(lock, scenario string) (verdict, badge, about string) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`raceOnce('`+lock+`', 'sale', {scenario: '`+scenario+`'}).then(e => e ? e.verdict : 'failed: ' + document.getElementById('raceStatus').textContent)`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s under %s: %v", lock, scenario, err)
		}
		cls, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#timelineCard .tl-overlaps').className`))
		ab, _ := chromedp.Run(ctx, chromedp.Text("#timelineCard .tl-about"))
		screenshot(t, ctx, lock+"-"+scenario+".png", "#timelineCard")
		return v, cls, ab
	}

	verdict, badge, about := run("setnx", "crash")
	if verdict != "DEADLOCK" {
		t.Fatalf("setnx under crash: %s, want DEADLOCK", verdict)
	}
	if strings.Contains(badge, " ok") || !strings.Contains(badge, "bad") {
		t.Errorf("setnx's DEADLOCK beside the badge %q: want bad, never ok", badge)
	}
	if !strings.Contains(about, "no TTL") || !strings.Contains(about, "stuck") {
		t.Errorf("the timeline says %q: want the stuck lock with no TTL", about)
	}
	if n := canvasPixels(t, ctx, "#timelineCard .tl-canvas", 0x7a, 0x27, 0x1a); n < 200 {
		t.Errorf("the stuck lock's strip: %d pixels, want it drawn", n)
	}
	// The story beside it, from the one source: the rung's Info, the
	// scenario's About; and where to look.
	story, _ := chromedp.Run(ctx, chromedp.Text("#raceStory"))
	want := suite.StoryFor("setnx", "crash")
	for _, part := range []string{want.Does, want.Flaw, want.Did, "the stuck lock"} {
		if !strings.Contains(story, part) {
			t.Errorf("the story beside setnx's DEADLOCK does not say %q: %q", part, story)
		}
	}
	screenshot(t, ctx, "race-card-setnx-crash.png", "#raceStory")
	flaw, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('#ladderGrid td[data-pair="crash setnx"]').parentElement.querySelector('td.flaw') || {}).textContent || ''`))
	if flaw != want.Flaw {
		t.Errorf("the ladder grid's flaw column says %q for setnx, want %q", flaw, want.Flaw)
	}
	status, _ := chromedp.Run(ctx, chromedp.Text("#raceStatus"))
	if strings.Contains(status, "-1") || strings.Contains(status, "oversold -") {
		t.Errorf("a negative count in the status: %q", status)
	}

	// setnx-expire under crash-before-expire: its holder dies between
	// SETNX and EXPIRE, before its section began; the DEADLOCK still
	// draws its stuck lock, in a row of its own (no lane answered).
	verdict, badge, about = run("setnx-expire", "crash-before-expire")
	if verdict != "DEADLOCK" {
		t.Fatalf("setnx-expire under crash-before-expire: %s, want DEADLOCK", verdict)
	}
	if !strings.Contains(badge, "bad") || !strings.Contains(about, "stuck") || !strings.Contains(about, "no TTL") {
		t.Errorf("setnx-expire's DEADLOCK: badge %q, the timeline says %q: want bad, and the stuck lock with no TTL", badge, about)
	}
	if text, _ := chromedp.Run(ctx, chromedp.Text("#timelineCard .tl-overlaps")); text != "stuck lock" {
		t.Errorf("setnx-expire's DEADLOCK badge says %q, want \"stuck lock\"", text)
	}
	if n := canvasPixels(t, ctx, "#timelineCard .tl-canvas", 0x7a, 0x27, 0x1a); n < 200 {
		t.Errorf("setnx-expire's stuck lock's strip: %d pixels, want it drawn", n)
	}

	verdict, badge, _ = run("del-setnx", "crash-wait")
	if verdict != "OVERSOLD" {
		t.Fatalf("del-setnx under crash-wait: %s, want OVERSOLD", verdict)
	}
	if !strings.Contains(badge, "bad") {
		t.Errorf("del-setnx's OVERSOLD beside the badge %q: want bad", badge)
	}
	if n := canvasPixels(t, ctx, "#timelineCard .tl-canvas", 0xc4, 0x32, 0x0a); n < 50 {
		t.Errorf("the overlapping sections: %d red pixels, want them drawn", n)
	}
	if story, _ := chromedp.Run(ctx, chromedp.Text("#raceStory")); !strings.Contains(story, "two holders wrote at once") || !strings.Contains(story, suite.StoryFor("del-setnx", "").Flaw) {
		t.Errorf("the story beside del-setnx's OVERSOLD: %q", story)
	}
	screenshot(t, ctx, "ladder-card.png", "#ladderCard")

	// lua under slow: a lease that ran out while held is red under its
	// bar from that moment.
	if verdict, _, _ = run("lua", "slow"); verdict != "OVERSOLD" {
		t.Fatalf("lua under slow: %s, want OVERSOLD", verdict)
	}
	if n := canvasPixels(t, ctx, "#timelineCard .tl-canvas", 0xf0, 0x44, 0x38); n < 20 {
		t.Errorf("lua's lapsed leases: %d red pixels under the bars, want them drawn", n)
	}
	screenshot(t, ctx, "page-del-setnx-crash-wait.png", "")

	// The timeline zooms and pans with the keyboard: + zooms in, the
	// right arrow pans later, 0 shows the whole race, as its button does.
	view := func() (float64, float64) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[tl.v0, tl.v1]`))
		if err != nil || len(v) != 2 {
			t.Fatalf("the timeline's view: %v %v", v, err)
		}
		return v[0], v[1]
	}
	if _, err := chromedp.Run(ctx, chromedp.Focus(chromedp.CSS("#timelineCard .tl-canvas"))); err != nil {
		t.Fatal(err)
	}
	a0, a1 := view()
	key := func(k string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.KeyEvent(k)); err != nil {
			t.Fatal(err)
		}
	}
	key("+")
	b0, b1 := view()
	if b1-b0 >= a1-a0 {
		t.Errorf("+ on the timeline: span %.0f -> %.0f us, want it narrower", a1-a0, b1-b0)
	}
	key(kb.ArrowRight)
	if c0, c1 := view(); c0 <= b0 || math.Abs((c1-c0)-(b1-b0)) > 1 {
		t.Errorf("→ on the timeline: view %.0f..%.0f -> %.0f..%.0f, want it later, as wide", b0, b1, c0, c1)
	}
	key("0")
	d0, d1 := view()
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS("#timelineCard .tl-all"))); err != nil {
		t.Fatal(err)
	}
	if w0, w1 := view(); math.Abs(d0-w0) > 1 || math.Abs(d1-w1) > 1 {
		t.Errorf("0 on the timeline: view %.0f..%.0f, want the whole race %.0f..%.0f (its button's)", d0, d1, w0, w1)
	}
}
