package report

import (
	_ "embed"
	"html/template"
	"strings"
)

// The timeline of a race's critical sections, as the page draws it and
// the HTML reports draw it: one script (timeline.js) and one markup
// (timeline.html), so a report shows a race as the page showed it.

// TimelineJS is the script that draws a race's timeline on a canvas.
//
//go:embed timeline.js
var TimelineJS string

//go:embed timeline.html
var timelineHTML string

// TimelineTemplates adds the timeline's templates to t: "timeline" (the
// script, for inside a script element), "tlview" (the markup makeTimeline
// draws in), "tllegend" (what the colours and marks say), "tlstyle" (its
// CSS rules, for inside a style element) and "tlreport" (TimelinesHTML's).
// The page includes the first four.
func TimelineTemplates(t *template.Template) *template.Template {
	template.Must(t.New("timeline").Parse(TimelineJS))
	return template.Must(t.New("timelineHTML").Parse(timelineHTML))
}

var timelinesTmpl = TimelineTemplates(template.New("report"))

// TimelineView is one race's timeline in an HTML report.
type TimelineView struct {
	Scenario, Lock string
	// Verdict, its colour (bench.VerdictColor), and Mark: how it stands
	// against the ladder's ("✓ as the ladder says").
	Verdict, Color, Mark string
	// Note is a line under the heading: what the scenario did, what the
	// run came to.
	Note string
	// Timeline is the race's timeline (race.Timeline), embedded as JSON.
	Timeline any
}

// TimelinesHTML is views drawn for an HTML report that opens offline:
// the legend once, then under each heading its race's timeline on a
// canvas, drawn by the page's script from its data, embedded as JSON in
// a script element of its own (escaped for it: a "</script>" in a
// string stays text), zoomed on the first overlap where there is one.
// Every string a run produced reaches the page as text, never as markup.
func TimelinesHTML(views []TimelineView) template.HTML {
	var b strings.Builder
	if err := timelinesTmpl.ExecuteTemplate(&b, "tlreport", views); err != nil {
		return template.HTML("<p>" + template.HTMLEscapeString(err.Error()) + "</p>")
	}
	return template.HTML(b.String())
}
