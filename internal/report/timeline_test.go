package report

import (
	"strings"
	"testing"
)

// TestTimelinesHTML: each view's heading and note are text, its timeline
// JSON in a script element of its own, escaped there ("</script>" in a
// string does not end it); the script that draws them writes no markup.
func TestTimelinesHTML(t *testing.T) {
	evil := `</script><img src=x onerror=alert(1)>`
	html := string(TimelinesHTML([]TimelineView{{Scenario: "pause", Lock: evil, Verdict: "OVERSOLD", Color: "#c4320a", Note: evil,
		Timeline: map[string][]string{"instances": {evil}}}}))
	if strings.Contains(html, "<img") {
		t.Errorf("markup from a view reached the report:\n%s", html)
	}
	if !strings.Contains(html, `{"instances":["\u003c/script\u003e\u003cimg src=x onerror=alert(1)\u003e"]}`) {
		t.Errorf("the timeline's data is not embedded as escaped JSON:\n%s", html)
	}
	if strings.Count(html, `class="tlview"`) != 1 || !strings.Contains(html, "makeTimeline(root)") {
		t.Errorf("want one view and the script that draws it:\n%s", html)
	}
	if strings.Contains(TimelineJS, "innerHTML") || strings.Contains(TimelineJS, "insertAdjacentHTML") {
		t.Error("the timeline's script writes markup")
	}
}
