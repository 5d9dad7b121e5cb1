package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/suite"
)

// evil is an instance name that would run a script if the report wrote it
// as markup.
const evil = `</script><img src=x onerror="window.pwned=1">`

// TestReportDrawsTimelines opens the demo's HTML report in a real
// headless Chromium, from a file, offline, as whoever ran make demo
// would: the ladder's grid, then a timeline for check-del under
// check-pause, which oversold (its overlapping holders drawn red, zoomed
// on the first overlap of two requests of one instance, named with markup
// that must stay text), and for fenced under pause, which stayed safe because the fence
// refused the frozen holder's stale write (marked in orange). The report
// is written as the demo writes it (bench.WriteHTML, suite.GridHTML,
// race.ReportTimelines), from runs made up here: what the report draws
// of a real run is TestPageShowsEachFlaw's, with the same script.
func TestReportDrawsTimelines(t *testing.T) {
	lane(t)
	ctx := browser(t)
	began := time.Now()
	ms := func(d float64) int64 { return began.UnixNano() + int64(d*float64(time.Millisecond)) }
	var checkDel []contract.Section
	for i := range 3000 { // a ladder's run at the articles' size
		at := float64(i) * 0.5
		checkDel = append(checkDel, contract.Section{Instance: []string{"app1", "app2", evil}[i%3], Lock: "check-del", Key: "lock:stock",
			Acquired: ms(at), Released: ms(at + 0.4), Wrote: i < 2500})
	}
	// A request of evil takes the lock at 601.1 ms while another of evil
	// holds it (601 to 601.4): the 1204th and the 1203rd to take it.
	checkDel = append(checkDel, contract.Section{Instance: evil, Lock: "check-del", Key: "lock:stock", Acquired: ms(601.1), Released: ms(601.3), Wrote: true})
	slices.SortStableFunc(checkDel, func(a, b contract.Section) int { return int(a.Acquired - b.Acquired) })
	rows := []bench.Row{
		{Scenario: "check-pause", Lock: "check-del", Endpoint: bench.EndpointSale, Verdict: bench.VerdictOversold, Expected: bench.VerdictOversold,
			Requests: 600, Oversold: 1, Overlaps: 1, Sections: len(checkDel), Began: began, Held: checkDel,
			Faults: []bench.Fault{{About: "fault=check-pause&pause=200ms", Call: int64(590 * time.Millisecond), Return: int64(801 * time.Millisecond), Instance: evil, Code: 200}}},
		{Scenario: "pause", Lock: "fenced", Endpoint: bench.EndpointSale, Verdict: bench.VerdictSafe, Expected: bench.VerdictSafe, Requests: 600, Sections: 3, Began: began,
			Held: []contract.Section{
				{Instance: "app1", Lock: "fenced", Key: "lock:stock", Token: 7, Acquired: ms(0), Released: ms(900), Refused: true},
				{Instance: "app2", Lock: "fenced", Key: "lock:stock", Token: 8, Acquired: ms(250), Released: ms(262), Wrote: true},
				{Instance: "app3", Lock: "fenced", Key: "lock:stock", Token: 9, Acquired: ms(270), Released: ms(281), Wrote: true},
			},
			Faults: []bench.Fault{{About: "fault=pause&pause=800ms", Call: 0, Return: int64(901 * time.Millisecond), Instance: "app1", Code: 409}}},
		{Scenario: "crash", Lock: "setnx", Endpoint: bench.EndpointSale, Verdict: bench.VerdictDeadlock, Expected: bench.VerdictDeadlock, Requests: 600, Began: began},
	}
	var html strings.Builder
	err := bench.WriteHTML(&html, rows, bench.Meta{Started: began},
		bench.HTMLSection{Title: "The ladder of flaws", Body: suite.GridHTML(rows, nil, time.Minute)},
		bench.HTMLSection{Title: "Who held the lock, and when", Body: race.ReportTimelines(rows)})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), "report.html")
	if err := os.WriteFile(path, []byte(html.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %s, %d bytes", path, html.Len())

	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('.tlview .tl-canvas[data-drawn]').length === 2`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		screenshot(t, ctx, "report-failed.png", "")
		t.Fatalf("waiting for the report's two timelines: %v", err)
	}
	eval := evaluator(t, ctx)
	text := func(sel string) string {
		return eval(`(document.querySelector(` + jsString(sel) + `) || {}).innerText || ''`)
	}
	const delView, fencedView = `.tlview[data-pair="check-pause check-del"]`, `.tlview[data-pair="pause fenced"]`

	if pwned := eval(`String(window.pwned)`); pwned != "undefined" {
		t.Errorf("a name from the run ran as markup: window.pwned = %s", pwned)
	}
	// check-del: its one overlap zoomed on, both holders red, the
	// instance named with markup shown as text.
	if h := text(delView + " h3"); !strings.HasPrefix(h, "check-del under check-pause: OVERSOLD") {
		t.Errorf("the first timeline's heading: %q", h)
	}
	if o := text(delView + " .tl-overlaps"); o != "1 overlap" {
		t.Errorf("check-del: %q beside its timeline, want 1 overlap", o)
	}
	pair := text(delView + " .tl-pair")
	// Two requests of one instance: named by their order, not by the
	// instance alone ("evil took the lock while evil held it").
	if !strings.HasPrefix(pair, "overlap 1 of 1: request 1204 on "+evil+" took the lock at 601.1 ms while request 1203, also on "+evil+", held it") {
		t.Errorf("check-del's overlap: %q", pair)
	}
	if red := canvasPixels(t, ctx, delView+" .tl-canvas", 196, 50, 10); red < 500 {
		t.Errorf("check-del's overlap: %d red pixels, want both holders drawn red", red)
	}
	if lanes := eval(`JSON.parse(document.querySelector(` + jsString(delView+" .tl-data") + `).textContent).instances.join(',')`); lanes != evil+",app1,app2" {
		t.Errorf("check-del's lanes: %q", lanes)
	}
	screenshot(t, ctx, "report-timeline-check-del.png", delView)
	if _, err := chromedp.Run(ctx, click(delView+" .tl-all")); err != nil {
		t.Fatal(err)
	}
	if drawn := eval(`document.querySelector(` + jsString(delView+" .tl-canvas") + `).dataset.drawn`); drawn != "3001" {
		t.Errorf("check-del's whole race: %s sections drawn, want 3001", drawn)
	}
	screenshot(t, ctx, "report-timeline-check-del-whole.png", delView)

	// fenced: no overlap, the frozen holder's stale write marked refused.
	if about := text(fencedView + " .tl-about"); !strings.Contains(about, "1 stale write refused by the fence") {
		t.Errorf("fenced's timeline says %q, want its stale write refused", about)
	}
	if o := text(fencedView + " .tl-overlaps"); o != "0 overlaps" {
		t.Errorf("fenced: %q beside its timeline", o)
	}
	if orange := canvasPixels(t, ctx, fencedView+" .tl-canvas", 181, 71, 8); orange < 200 {
		t.Errorf("fenced: %d orange pixels, want the refused write outlined", orange)
	}
	screenshot(t, ctx, "report-timeline-fenced.png", fencedView)
	screenshot(t, ctx, "report.png", "")
}

// jsString quotes s for a script.
func jsString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
}
