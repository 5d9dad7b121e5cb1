package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	if cfg.Previous == nil {
		cfg.Previous = previousRows(filepath.Join(dir, "latest.json"), cfg)
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

// previousRows are the rows of the report at path when it ran the same
// requests, concurrency and items as cfg; nil otherwise (none yet, another
// size, unreadable): they only guide the progress line.
func previousRows(path string, cfg Config) []Row {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var rep struct {
		Meta Meta  `json:"meta"`
		Rows []Row `json:"rows"`
	}
	if json.Unmarshal(b, &rep) != nil || rep.Meta.Requests != cfg.Requests ||
		rep.Meta.Concurrency != cfg.Concurrency || rep.Meta.SKUs != cfg.SKUs {
		return nil
	}
	return rep.Rows
}

// tookBefore is how long each plain run of rows took, by "lock/endpoint".
func tookBefore(rows []Row) map[string]time.Duration {
	took := map[string]time.Duration{}
	for _, r := range rows {
		if r.DurationMs > 0 && (r.Scenario == "" || r.Scenario == ScenarioNormal) {
			took[r.Lock+"/"+r.Endpoint] = time.Duration(r.DurationMs * float64(time.Millisecond))
		}
	}
	return took
}
