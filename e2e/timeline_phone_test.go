package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTimelineLabelsOnAPhone races the fault scenarios' pairs of the
// ladder on a phone's screen (390x844, in a real headless Chromium) and
// checks that no two texts the timeline draws overlap, the faults'
// labels above all (a crash scenario's come a few pixels apart there):
// zoomed on the evidence and on the whole race. Each fault in view is
// named, numbered (#3, named under the canvas), or counted under the
// canvas. The timelines are kept as screenshots.
func TestTimelineLabelsOnAPhone(t *testing.T) {
	lane(t)
	ctx := browser(t)
	st := startStack(t)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(st.URL()+"/lab")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.WaitVisible("#raceBtn")); err != nil {
		t.Fatal(err)
	}
	// check reads the timeline's texts and says which overlap, and how
	// the faults in view were labelled.
	check := func(pair, view string) (faults, labelled int) {
		t.Helper()
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({texts: tl.texts || [],
			faults: tl.t ? tl.t.faults.filter(f => f.until_us >= tl.v0 && f.at_us <= tl.v1).length : 0,
			note: document.querySelector('#timelineCard .tl-faults').textContent})`))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Texts []struct {
				Text, Kind     string
				X0, X1, Y0, Y1 float64
			}
			Faults int
			Note   string
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v (%s)", pair, err, out)
		}
		for i, a := range got.Texts {
			for _, b := range got.Texts[i+1:] {
				if a.X0 < b.X1 && b.X0 < a.X1 && a.Y0 < b.Y1 && b.Y0 < a.Y1 {
					t.Errorf("%s, %s: the timeline drew %q (x %.0f-%.0f, y %.0f-%.0f) over %q (x %.0f-%.0f, y %.0f-%.0f)",
						pair, view, a.Text, a.X0, a.X1, a.Y0, a.Y1, b.Text, b.X0, b.X1, b.Y0, b.Y1)
				}
			}
		}
		named := 0
		for _, x := range got.Texts {
			if x.Kind == "fault" {
				named++
			}
		}
		// every fault in view is named on the canvas or under it
		counted := strings.Count(got.Note, "#")
		var more int
		if i := strings.Index(got.Note, " more fault"); i >= 0 {
			fmt.Sscanf(got.Note[strings.LastIndex(got.Note[:i], " ")+1:], "%d", &more)
		}
		if got.Faults > 0 && named+more < got.Faults {
			t.Errorf("%s, %s: %d faults in view, %d labelled on the canvas, %d more counted under it (%q)", pair, view, got.Faults, named, more, got.Note)
		}
		t.Logf("%s, %s: %d texts, %d faults in view, %d labelled, %d numbered, %d counted: %q", pair, view, len(got.Texts), got.Faults, named, counted, more, got.Note)
		return got.Faults, named
	}
	pairs := [][2]string{{"setnx", "crash"}, {"setnx-expire", "crash-before-expire"}, {"del-setnx", "crash-wait"},
		{"check-del", "check-pause"}, {"lua", "slow"}, {"getset", "skew"}, {"redlock", "pause"}}
	faults := 0
	for _, p := range pairs {
		lock, scenario := p[0], p[1]
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`raceOnce('`+lock+`', 'sale', {scenario: '`+scenario+`'}).then(e => e ? e.verdict : 'failed: ' + document.getElementById('raceStatus').textContent)`, chromedp.EvalAwaitPromise))
		if err != nil || strings.HasPrefix(v, "failed") {
			t.Fatalf("%s under %s: %s %v", lock, scenario, v, err)
		}
		pair := lock + " under " + scenario + " (" + v + ")"
		n, _ := check(pair, "its evidence")
		faults += n
		screenshot(t, ctx, "phone-timeline-"+lock+"-"+scenario+".png", "#timelineCard")
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`tl.whole()`)); err != nil {
			t.Fatal(err)
		}
		n, _ = check(pair, "the whole race")
		faults += n
		screenshot(t, ctx, "phone-timeline-"+lock+"-"+scenario+"-whole.png", "#timelineCard")
	}
	if faults == 0 {
		t.Errorf("no fault in view on any of the timelines: nothing was checked")
	}
}
