package bench

import (
	"context"
	"fmt"
	"io"
	"time"
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
	for _, l := range NotRunLines(rows) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, legend)
	meta := NewMeta(cfg, started)
	meta.Notes = notes
	jsonPath, mdPath, err := WriteReports(dir, rows, meta)
	if err != nil {
		return rows, err
	}
	htmlPath, err := writeHTMLBeside(jsonPath, rows, meta)
	if err != nil {
		return rows, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n         %s\n", jsonPath, mdPath, htmlPath)
	return rows, runErr
}
