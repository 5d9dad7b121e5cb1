package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lockladder/lockladder/suite"
)

// The page draws every failure: setnx under crash shows its stuck lock
// (a dark red strip to the end of the race, key and "no TTL"), and a
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
}
