package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/suite"
)

// ladder is the demo's second table: each rung under the scenario that
// shows its flaw, each scenario on a fresh stack of its own on free ports
// beside the demo's (suite.RunLadder), written scenario by scenario in
// the ladder's order, each line with the lock's flaw (suite.WriteLadder).
func ladder(ctx context.Context, so cli.StackOptions, bo cli.BenchOptions, plain []bench.Row) ([]bench.Row, []suite.Skip, time.Duration, error) {
	n, c, stock := suite.LadderSize("")
	cwN, cwC, cwStock := suite.LadderSize("crash-wait")
	fmt.Printf("\nthe ladder of flaws: each rung under the scenario that shows its flaw, each scenario on a fresh stack;\n"+
		"%d requests at %d concurrent, stock %d (crash-wait: %d at %d, stock %d)\n", n, c, stock, cwN, cwC, cwStock)
	rows, skips, took, err := suite.RunLadder(ctx, suite.LadderConfig{Stack: so.Config, Plain: plain, HistoryDir: bo.Out, Progress: os.Stderr})
	if err != nil {
		return rows, skips, took, err
	}
	fmt.Println()
	return rows, skips, took, suite.WriteLadder(os.Stdout, rows, skips, took)
}

// ladderReports adds the ladder's grid to the throughput table's HTML
// report (under its charts), and the timeline of each run that failed or
// whose fence refused a stale write (race.ReportTimelines), and writes
// the matrix's reports of its runs beside it.
func ladderReports(dir string, rep bench.Reports, plain, rows []bench.Row, skips []suite.Skip, took time.Duration) error {
	sections := []bench.HTMLSection{{
		Title: "The ladder of flaws: each rung under the scenario that shows its flaw",
		Body:  suite.GridHTML(rows, skips, took),
	}}
	if tl := race.ReportTimelines(rows); tl != "" {
		sections = append(sections, bench.HTMLSection{
			Title: suite.TimelinesTitle,
			Body:  tl,
		})
	}
	if err := rep.AddHTML(plain, sections...); err != nil {
		return err
	}
	meta := rep.Meta
	meta.Requests, meta.Concurrency, meta.Stock = suite.LadderSize("")
	cwN, cwC, cwStock := suite.LadderSize("crash-wait")
	meta.URL = ""
	meta.Notes = []string{"the ladder of flaws of make demo: each scenario on a fresh stack on free loopback ports",
		fmt.Sprintf("crash-wait: %d requests at %d concurrent, stock %d", cwN, cwC, cwStock),
		"normal: the throughput table's rows, at its size"}
	jsonPath, mdPath, err := suite.WriteMatrixReports(dir, rows, skips, meta, took)
	if err != nil {
		return err
	}
	fmt.Printf("\nreports: %s (the ladder added)\n         %s\n         %s\n", rep.HTML, jsonPath, mdPath)
	return nil
}
