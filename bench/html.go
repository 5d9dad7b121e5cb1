package bench

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/lockladder/lockladder/internal/report"
)

// The HTML report: the table, and bar charts of throughput and p99 per
// lock and endpoint, drawn in inline SVG (no script, no network: it opens
// offline, as the page does).

// bar is one bar of a chart.
type bar struct {
	Label, Value, Color string
	Y, W                float64
}

// chart is one horizontal bar chart.
type chart struct {
	Title  string
	Bars   []bar
	Height float64
}

const (
	chartLabelW = 120.0
	chartBarsW  = 420.0
	chartRowH   = 20.0
)

// verdictColor is the colour of a row's bars: green when it held, red
// when it oversold or lost updates, amber otherwise.
func verdictColor(v string) string {
	switch v {
	case VerdictSafe:
		return "#12805c"
	case VerdictOversold, VerdictLostUpdates, VerdictOverlap:
		return "#c4320a"
	}
	return "#b54708"
}

// barChart charts value(r) for the rows of one endpoint that ran.
func barChart(title string, rows []Row, endpoint string, value func(Row) float64, unit string) chart {
	c := chart{Title: title}
	var top float64
	for _, r := range rows {
		if r.Endpoint == endpoint && r.NotRun == "" {
			top = math.Max(top, value(r))
		}
	}
	for _, r := range rows {
		if r.Endpoint != endpoint || r.NotRun != "" {
			continue
		}
		w := 0.0
		if top > 0 {
			w = chartBarsW * value(r) / top
		}
		c.Bars = append(c.Bars, bar{Label: r.Lock, Value: fmt.Sprintf("%.0f %s", value(r), unit),
			Color: verdictColor(r.Verdict), Y: float64(len(c.Bars)) * chartRowH, W: math.Max(w, 1)})
	}
	c.Height = float64(len(c.Bars))*chartRowH + 4
	return c
}

var htmlTmpl = template.Must(template.New("report").Parse(`{{define "top"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
 body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 78rem; padding: 0 1rem; color: #1d2430; }
 h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 2rem; }
 .muted { color: #667085; }
 .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(36rem, 1fr)); gap: 1rem 2rem; }
 table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
 td, th { padding: .25rem .5rem; border-bottom: 1px solid #e4e7ec; text-align: right; white-space: nowrap; }
 td:first-child, th:first-child, td:nth-child(2), th:nth-child(2) { text-align: left; }
 .v { color: #fff; border-radius: 999px; padding: 0 .5rem; font-weight: 600; }
 svg text { font: 12px system-ui, sans-serif; fill: #1d2430; }
</style></head><body>
<h1>{{.Title}}</h1>
<ul class="muted">{{range .Meta}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{define "sections"}}{{range .Sections}}<h2>{{.Title}}</h2>
{{.Body}}
{{end}}{{end}}{{template "top" .}}<div class="charts">
{{range .Charts}}<figure style="margin:0"><figcaption><b>{{.Title}}</b></figcaption>
<svg width="640" height="{{.Height}}" viewBox="0 0 640 {{.Height}}" role="img" aria-label="{{.Title}}">
{{range .Bars}}<text x="0" y="{{.Y}}" dy="14">{{.Label}}</text><rect x="120" y="{{.Y}}" width="{{.W}}" height="15" rx="2" fill="{{.Color}}"></rect><text x="{{.W}}" dx="126" y="{{.Y}}" dy="13">{{.Value}}</text>
{{end}}</svg></figure>
{{end}}</div>
{{template "sections" .}}<h2>The table</h2>
<div style="overflow-x:auto"><table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $c := .Cells}}<td>{{$c}}</td>{{end}}<td><span class="v" style="background:{{.Color}}">{{.Verdict}}</span></td></tr>
{{end}}</table></div>
<p class="muted">{{.Legend}}</p>
<p class="muted">Bars: green SAFE, red OVERSOLD, LOST UPDATES or OVERLAP, amber anything else. A lock that could not run here has no bar.</p>
</body></html>
`))

// pageTmpl is a report of sections only, in the HTML report's style.
var pageTmpl = template.Must(template.Must(htmlTmpl.Clone()).New("page").Parse(
	`{{template "top" .}}{{template "sections" .}}</body></html>
`))

// WritePage writes an HTML report of sections only (the matrix's grid and
// timelines), titled and with meta's list, in the HTML report's style.
func WritePage(w io.Writer, title string, meta Meta, sections ...HTMLSection) error {
	return pageTmpl.ExecuteTemplate(w, "page", struct {
		Title    string
		Meta     []string
		Sections []HTMLSection
	}{title, metaLines(meta), sections})
}

// metaLines is meta's list, a line each.
func metaLines(meta Meta) []string {
	var list strings.Builder
	meta.WriteList(&list)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(list.String()), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "- "))
	}
	return lines
}

// HTMLSection is more of the HTML report, between its charts and its
// table: a title and
// a body of HTML its maker vouches for (package suite's grid, say).
type HTMLSection struct {
	Title string
	Body  template.HTML
}

// VerdictColor is the colour the reports give a verdict: green SAFE, red
// OVERSOLD, LOST UPDATES or OVERLAP, amber anything else.
func VerdictColor(v string) string { return verdictColor(v) }

// htmlRow is a table row: its cells but the verdict, then the verdict.
type htmlRow struct {
	Cells          []string
	Verdict, Color string
}

// WriteHTML writes the HTML report of rows, sections before its table.
func WriteHTML(w io.Writer, rows []Row, meta Meta, sections ...HTMLSection) error {
	cols := columnsFor(rows)
	var head []string
	for _, c := range cols {
		if c.head != "verdict" {
			head = append(head, c.head)
		}
	}
	head = append(head, "verdict")
	var trs []htmlRow
	for _, r := range rows {
		var cells []string
		for _, c := range cols {
			if c.head != "verdict" {
				cells = append(cells, c.show(r))
			}
		}
		trs = append(trs, htmlRow{Cells: cells, Verdict: r.Verdict, Color: verdictColor(r.Verdict)})
	}
	rps := func(r Row) float64 { return r.RPS }
	p99 := func(r Row) float64 { return r.P99Ms }
	return htmlTmpl.Execute(w, struct {
		Title    string
		Meta     []string
		Charts   []chart
		Head     []string
		Rows     []htmlRow
		Legend   string
		Sections []HTMLSection
	}{
		Title: "Lock ladder benchmark, " + meta.Started.Format("2006-01-02 15:04:05 MST"),
		Meta:  metaLines(meta),
		Charts: []chart{
			barChart("/sale: throughput", rows, "sale", rps, "req/s"),
			barChart("/sale: p99 latency", rows, "sale", p99, "ms"),
			barChart("/testLock: throughput", rows, "testLock", rps, "req/s"),
			barChart("/testLock: p99 latency", rows, "testLock", p99, "ms"),
		},
		Head: head, Rows: trs, Legend: LegendFor(rows), Sections: sections,
	})
}

// writeHTMLBeside writes the HTML report beside the JSON one (same name,
// .html) and as latest.html, returning its path.
func writeHTMLBeside(jsonPath string, rows []Row, meta Meta, sections ...HTMLSection) (string, error) {
	var b strings.Builder
	if err := WriteHTML(&b, rows, meta, sections...); err != nil {
		return "", fmt.Errorf("bench: the HTML report: %w", err)
	}
	return report.WriteBeside(jsonPath, "latest", []byte(b.String()))
}
