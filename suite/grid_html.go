package suite

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
)

// gridTmpl is the grid as HTML: a table coloured by verdict, an
// unexpected verdict outlined, then the skipped pairs and the summary.
var gridTmpl = template.Must(template.New("grid").Parse(`<div style="overflow-x:auto"><table class="grid" style="border-collapse:collapse">
<tr><th style="text-align:left">lock</th>{{range .Scenarios}}<th style="text-align:center">{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><td style="text-align:left"><code>{{.Label}}</code></td>{{range .Cells}}{{if .Color}}<td style="text-align:center"><span class="v" style="background:{{.Color}}{{if .Unexpected}};outline:3px solid #1d2430{{end}}">{{.Text}}</span></td>{{else}}<td style="text-align:center;color:#98a2b3">{{.Text}}</td>{{end}}{{end}}</tr>
{{end}}</table></div>
{{if .Skipped}}<p class="muted">Skipped ({{.SkippedPairs}} pairs):</p><ul class="muted">{{range .Skipped}}<li>{{index . 0}}: {{index . 2}}: {{index . 1}}</li>{{end}}</ul>{{end}}
<p><b>{{.Summary}}</b></p>
{{range .Unexpected}}<p style="color:#c4320a">{{.}}</p>{{end}}`))

// GridHTML is WriteGrid's grid as HTML, for the reports (the demo's, whose
// ladder of flaws it draws): a row per lock in ladder order, a column per
// scenario, each cell the verdict measured, coloured as the reports colour
// verdicts, with ✓ when the ladder expects it and "✗ want X" (outlined)
// when it does not; then the skipped pairs, with their reasons, and the
// summary.
func GridHTML(rows []bench.Row, skips []Skip, took time.Duration) template.HTML {
	type cell struct {
		Text, Color string
		Unexpected  bool
	}
	type row struct {
		Label string
		Cells []cell
	}
	byCell := map[[2]string]bench.Row{}
	for _, r := range rows {
		byCell[[2]string{label(r.Lock, r.Endpoint), r.Scenario}] = r
	}
	g := newGrid(rows, skips, gridCell)
	data := struct {
		Scenarios    []string
		Rows         []row
		Skipped      [][3]string
		SkippedPairs int
		Summary      string
		Unexpected   []string
	}{Scenarios: g.scenarios, Skipped: g.skipped}
	for _, l := range g.labels {
		rw := row{Label: l}
		for _, sc := range g.scenarios {
			c := cell{Text: g.cells[[2]string{l, sc}]}
			if r, ok := byCell[[2]string{l, sc}]; ok {
				c.Color = bench.VerdictColor(r.Verdict)
				c.Unexpected = r.Expected != "" && r.Verdict != r.Expected
			}
			rw.Cells = append(rw.Cells, c)
		}
		data.Rows = append(data.Rows, rw)
	}
	for _, s := range g.skipped {
		data.SkippedPairs += strings.Count(s[2], ",") + 1
	}
	sum := summarize(rows, skips, took)
	data.Summary = sum.line()
	for _, u := range sum.Unexpected {
		data.Unexpected = append(data.Unexpected, bench.MarkUnexpected+" "+u)
	}
	var b strings.Builder
	if err := gridTmpl.Execute(&b, data); err != nil {
		return template.HTML(template.HTMLEscapeString(err.Error()))
	}
	return template.HTML(b.String())
}

// TimelinesTitle heads the reports' timelines.
const TimelinesTitle = "Who held the lock, and when: the timeline of each run that failed, and of each fence's refusal"

// WriteMatrixHTML writes the matrix's HTML report beside its JSON one
// (same name, .html) and as matrix-latest.html: the grid (GridHTML), then
// timelines (the timeline of each run that failed or whose fence refused
// a stale write), when there are any. It returns the report's path.
func WriteMatrixHTML(jsonPath string, rows []bench.Row, skips []Skip, meta bench.Meta, took time.Duration, timelines template.HTML) (string, error) {
	sections := []bench.HTMLSection{{Title: "The ladder of flaws: each lock under each scenario", Body: GridHTML(rows, skips, took)}}
	if timelines != "" {
		sections = append(sections, bench.HTMLSection{Title: TimelinesTitle, Body: timelines})
	}
	var b strings.Builder
	if err := bench.WritePage(&b, "Lock ladder matrix, "+meta.Started.Format("2006-01-02 15:04:05 MST"), meta, sections...); err != nil {
		return "", fmt.Errorf("suite: the matrix's HTML report: %w", err)
	}
	return report.WriteBeside(jsonPath, "matrix-latest", []byte(b.String()))
}
