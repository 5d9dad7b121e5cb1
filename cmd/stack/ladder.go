package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/cli"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/suite"
)

// ladder is the demo's second table: each rung under the scenario that
// shows its flaw (suite.Flaws), each scenario on a fresh stack of its own
// on free ports beside the demo's, and the verdicts as the matrix's grid,
// each against the ladder's. The normal scenario's pairs are the
// throughput table's own rows where it ran them. It returns the rows (the
// throughput table's included), the pairs skipped and how long it took.
func ladder(ctx context.Context, so cli.StackOptions, bo cli.BenchOptions, plain []bench.Row) ([]bench.Row, []suite.Skip, time.Duration, error) {
	normal, err := suite.LookupScenario(bench.ScenarioNormal)
	if err != nil {
		return nil, nil, 0, err
	}
	var rows []bench.Row
	var skips []suite.Skip
	var pairs []suite.Pair
	for _, p := range suite.Flaws() {
		i := slices.IndexFunc(plain, func(r bench.Row) bool { return r.Lock == p.Lock && r.Endpoint == bench.EndpointSale })
		switch {
		case p.Scenario == normal.Name && i >= 0 && plain[i].NotRun == "":
			r := plain[i]
			r.Expected, _, _ = normal.Expected(r.Lock, r.Endpoint)
			rows = append(rows, r)
		case i >= 0 && plain[i].NotRun != "":
			// Its server is missing here: no fresh stack has it either.
			skips = append(skips, suite.Skip{Scenario: p.Scenario, Lock: p.Lock, Reason: "unavailable here: " + plain[i].NotRun})
		default:
			pairs = append(pairs, p)
		}
	}

	tmpl := so.Config
	tmpl.Races, tmpl.Log = nil, nil // no page on these stacks, no log of their start
	started := time.Now()
	n, c, stock := suite.LadderSize("")
	cwN, cwC, cwStock := suite.LadderSize("crash-wait")
	fmt.Printf("\nthe ladder of flaws: each rung under the scenario that shows its flaw, each scenario on a fresh stack;\n"+
		"%d requests at %d concurrent, stock %d (crash-wait: %d at %d, stock %d)\n", n, c, stock, cwN, cwC, cwStock)
	// pause-session's runs mostly wait for frozen instances (four pauses
	// of 2.5s each), majority-crash's for a holder's 3s business: their
	// pairs run beside the others, each group on stacks of its own, and
	// the ladder takes the longer group's time, not the sum. Both report
	// whole lines, one per run.
	var beside, first []suite.Pair
	for _, p := range pairs {
		if p.Scenario == "pause-session" || p.Scenario == "majority-crash" {
			beside = append(beside, p)
		} else {
			first = append(first, p)
		}
	}
	progress := &lineWriter{w: os.Stderr}
	matrix := func(pairs []suite.Pair) ([]bench.Row, []suite.Skip, error) {
		if len(pairs) == 0 {
			return nil, nil, nil
		}
		return suite.RunMatrix(ctx, suite.MatrixConfig{
			Pairs:      pairs,
			Size:       suite.LadderSize,
			Stack:      tmpl,
			Progress:   progress,
			HistoryDir: bo.Out,
		})
	}
	var wg sync.WaitGroup
	var besideRows []bench.Row
	var besideSkips []suite.Skip
	var besideErr error
	wg.Go(func() { besideRows, besideSkips, besideErr = matrix(beside) })
	got, more, err := matrix(first)
	wg.Wait()
	got, more, err = append(got, besideRows...), append(more, besideSkips...), errors.Join(err, besideErr)
	rows, skips = append(rows, got...), append(skips, more...)
	took := time.Since(started)
	if err != nil {
		return rows, skips, took, err
	}
	fmt.Println()
	return rows, skips, took, suite.WriteGrid(os.Stdout, rows, skips, took)
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

// lineWriter passes whole lines on to w, one writer at a time: the
// ladder's two groups report side by side, a line per run (not being a
// terminal, it gets no live line, which the two would garble).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
