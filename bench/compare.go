package bench

import (
	"context"
	"encoding/json"
	"errors"
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
	rows, _, err := CompareReports(ctx, cfg, dir, notes, w)
	return rows, err
}

// Reports are the report files of a comparison, and what they say of it.
type Reports struct {
	JSON, Markdown, HTML string
	Meta                 Meta
}

// CompareReports is Compare, also returning the reports it wrote (none
// when no run finished), for a caller that adds to them (AddHTML).
func CompareReports(ctx context.Context, cfg Config, dir string, notes []string, w io.Writer) ([]Row, Reports, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	if cfg.Previous == nil {
		cfg.Previous = previousRows(filepath.Join(dir, "latest.json"), cfg)
	}
	var rep Reports
	rows, runErr := Run(ctx, cfg)
	if len(rows) == 0 {
		return nil, rep, runErr
	}
	fmt.Fprintln(w)
	table, key := WriteTable, ShortKey
	if cfg.Brief {
		table, key = WritePairs, BriefKey
	}
	if err := table(w, rows); err != nil {
		return rows, rep, err
	}
	for _, l := range NotRunLines(rows) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, key)
	meta := NewMeta(cfg, started)
	meta.Notes = notes
	jsonPath, mdPath, err := WriteReports(dir, rows, meta)
	if err != nil {
		return rows, rep, err
	}
	htmlPath, err := writeHTMLBeside(jsonPath, rows, meta)
	if err != nil {
		return rows, rep, err
	}
	rep = Reports{JSON: jsonPath, Markdown: mdPath, HTML: htmlPath, Meta: meta}
	if cfg.Brief {
		fmt.Fprintf(w, "reports: %s (every column; .md and .html beside it)\n", jsonPath)
	} else {
		fmt.Fprintf(w, "\nreports: %s\n         %s\n         %s\n", jsonPath, mdPath, htmlPath)
	}
	return rows, rep, runErr
}

// AddHTML writes the HTML report of rep again, rows as they were, with
// sections after its table (as latest.html too).
func (rep Reports) AddHTML(rows []Row, sections ...HTMLSection) error {
	if rep.JSON == "" {
		return errors.New("bench: no report to add to")
	}
	_, err := writeHTMLBeside(rep.JSON, rows, rep.Meta, sections...)
	return err
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
