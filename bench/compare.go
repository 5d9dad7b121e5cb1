package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// Compare runs the benchmark (Run), prints the table to w and writes the
// JSON and Markdown reports into dir, saying where. notes go into the
// reports' header (what the stack ran on, say). It returns the rows; when a
// run fails it still prints and writes what finished before the error.
func Compare(ctx context.Context, cfg Config, dir string, notes []string, w io.Writer) ([]Row, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	rows, runErr := Run(ctx, cfg)
	if len(rows) == 0 {
		return nil, runErr
	}
	fmt.Fprintln(w)
	if err := WriteTable(w, rows); err != nil {
		return rows, err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, Legend)
	meta := NewMeta(cfg, started)
	meta.Notes = notes
	jsonPath, mdPath, err := WriteReports(dir, rows, meta)
	if err != nil {
		return rows, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n", jsonPath, mdPath)
	return rows, runErr
}

// CompareMatrix runs the strategies x scenarios matrix (RunMatrix), prints
// the rows and the grid of verdicts to w, and writes the matrix reports into
// dir, saying where. The reports' notes name what the first stack ran
// (redis-server, nginx, with versions) when the stack can say
// (Summary() []string, as *stack.Stack does). When a run fails it still
// prints and writes what finished before the error.
func CompareMatrix(ctx context.Context, cfg MatrixConfig, dir string, w io.Writer) ([]Row, []Skip, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	var notes []string
	start := cfg.Start
	if start == nil {
		start = startStack
	}
	cfg.Start = func(ctx context.Context, c stack.Config) (Topology, error) {
		t, err := start(ctx, c)
		if s, ok := t.(interface{ Summary() []string }); ok && err == nil && notes == nil {
			notes = append([]string{"each scenario on a fresh stack on free loopback ports; the first:"}, s.Summary()...)
		}
		return t, err
	}
	rows, skips, runErr := RunMatrix(ctx, cfg)
	took := time.Since(started)
	if len(rows) == 0 && len(skips) == 0 {
		return nil, nil, runErr
	}
	if len(rows) > 0 {
		fmt.Fprintln(w)
		if err := WriteTable(w, rows); err != nil {
			return rows, skips, err
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, legendFor(rows))
	}
	fmt.Fprintln(w)
	if err := WriteGrid(w, rows, skips, took); err != nil {
		return rows, skips, err
	}

	base, _ := cfg.base()
	meta := Meta{
		Started: started, Requests: base.Requests, Concurrency: base.Concurrency, Stock: base.Stock,
		Host: HostInfo(), Notes: notes,
	}
	jsonPath, mdPath, err := WriteMatrixReports(dir, rows, skips, meta, took)
	if err != nil {
		return rows, skips, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n", jsonPath, mdPath)
	return rows, skips, runErr
}
