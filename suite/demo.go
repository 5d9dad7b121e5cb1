package suite

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// DemoLadder is the second table of `make demo`: each rung under the
// scenario that shows its flaw, each scenario on a fresh stack of its own
// on free ports beside the demo's (RunLadder, stacks derived from tmpl),
// written on w scenario by scenario in the ladder's order, each line with
// the lock's flaw (WriteLadder); progress goes to progress. Its grid is
// added to the throughput table's HTML report rep (under its charts), with
// the timeline of each run that failed or whose fence refused a stale
// write (timelines: race.ReportTimelines, which imports this package),
// and the matrix's reports of its runs are written beside it in dir.
// plain are the throughput table's rows.
func DemoLadder(ctx context.Context, tmpl stack.Config, dir string, rep bench.Reports, plain []bench.Row,
	timelines func([]bench.Row) template.HTML, w, progress io.Writer) error {
	n, c, stock := LadderSize("")
	cwN, cwC, cwStock := LadderSize("crash-wait")
	fmt.Fprintf(w, "\nthe ladder of flaws: each rung under the scenario that shows its flaw, each scenario on a fresh stack;\n"+
		"%d requests at %d concurrent, stock %d (crash-wait: %d at %d, stock %d)\n", n, c, stock, cwN, cwC, cwStock)
	rows, skips, took, err := RunLadder(ctx, LadderConfig{Stack: tmpl, Plain: plain, HistoryDir: dir, Progress: progress})
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := WriteLadder(w, rows, skips, took); err != nil {
		return err
	}
	return ladderReports(dir, rep, plain, rows, skips, took, timelines, w)
}

// ladderReports adds the ladder's grid and timelines to rep's HTML and
// writes the matrix's reports of its runs in dir.
func ladderReports(dir string, rep bench.Reports, plain, rows []bench.Row, skips []Skip, took time.Duration,
	timelines func([]bench.Row) template.HTML, w io.Writer) error {
	sections := []bench.HTMLSection{{
		Title: "The ladder of flaws: each rung under the scenario that shows its flaw",
		Body:  GridHTML(rows, skips, took),
	}}
	if tl := timelines(rows); tl != "" {
		sections = append(sections, bench.HTMLSection{Title: TimelinesTitle, Body: tl})
	}
	if err := rep.AddHTML(plain, sections...); err != nil {
		return err
	}
	meta := rep.Meta
	meta.Requests, meta.Concurrency, meta.Stock = LadderSize("")
	cwN, cwC, cwStock := LadderSize("crash-wait")
	meta.URL = ""
	meta.Notes = []string{"the ladder of flaws of make demo: each scenario on a fresh stack on free loopback ports",
		fmt.Sprintf("crash-wait: %d requests at %d concurrent, stock %d", cwN, cwC, cwStock),
		"normal: the throughput table's rows, at its size"}
	jsonPath, mdPath, err := WriteMatrixReports(dir, rows, skips, meta, took)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nreports: %s (the ladder added)\n         %s\n         %s\n", rep.HTML, jsonPath, mdPath)
	return nil
}
