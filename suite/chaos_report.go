package suite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
)

var chaosColumns = []struct {
	head  string
	right bool
	cell  func(ChaosRow) string
}{
	{"#", true, func(r ChaosRow) string { return strconv.Itoa(r.Fault) }},
	{"fault", false, func(r ChaosRow) string { return r.Name }},
	{"lock", false, func(r ChaosRow) string { return r.Lock }},
	{"runs", true, func(r ChaosRow) string { return strconv.Itoa(r.Runs) }},
	{"requests", true, func(r ChaosRow) string { return strconv.Itoa(r.Requests) }},
	{"ok", true, func(r ChaosRow) string { return strconv.Itoa(r.OK) }},
	{"errors", false, func(r ChaosRow) string { return report.Counts(r.Errors) }},
	{"violations", true, func(r ChaosRow) string { return strconv.Itoa(r.Violations) }},
	{"recovery ms", true, func(r ChaosRow) string {
		if r.RecoveryMs < 0 {
			return "-"
		}
		return report.MsCell(r.RecoveryMs)
	}},
	{"figure", false, func(r ChaosRow) string { return r.Figure }},
	{"pass", false, func(r ChaosRow) string {
		if r.Pass {
			return "yes"
		}
		return "NO: want " + r.Want
	}},
}

// WriteChaosTable writes the fault suite's rows as an aligned table.
func WriteChaosTable(w io.Writer, rows []ChaosRow) error {
	lines := [][]string{make([]string, len(chaosColumns)), nil}
	for i, c := range chaosColumns {
		lines[0][i] = c.head
	}
	for _, r := range rows {
		line := make([]string, len(chaosColumns))
		for i, c := range chaosColumns {
			line[i] = c.cell(r)
		}
		lines = append(lines, line)
	}
	report.Aligned(w, lines, func(i int) bool { return chaosColumns[i].right })
	return nil
}

// writeChaosMarkdown writes the rows as a Markdown table.
func writeChaosMarkdown(w io.Writer, rows []ChaosRow) error {
	head := make([]string, len(chaosColumns))
	for i, c := range chaosColumns {
		head[i] = c.head
	}
	report.MarkdownHead(w, head, func(i int) bool { return chaosColumns[i].right })
	for _, r := range rows {
		cells := make([]string, len(chaosColumns))
		for i, c := range chaosColumns {
			cells[i] = report.MarkdownEscape(c.cell(r))
		}
		report.MarkdownRow(w, cells)
	}
	return nil
}

// chaosLegend says what the table's columns mean.
const chaosLegend = "errors by class: 503 lock = the lock not had in time or Redis down while taking it (nothing changed), " +
	"503 redis = Redis failed under the write (maybe applied), 502/504 = the load balancer got no answer, conn = no answer at all; " +
	"violations = overlapping critical sections + illegal histories (porcupine) + runs whose books do not balance; " +
	"recovery and figure: what each fault measures; pass: the figure meets what the issue asks of the fault."

// CompareChaos runs the fault suite, prints its table to w and writes
// dir/chaos-YYYYMMDD-HHMMSS.{json,md} and dir/chaos-latest.{json,md}.
func CompareChaos(ctx context.Context, cfg ChaosConfig, dir string, w io.Writer) ([]ChaosRow, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(started.UnixNano())
	}
	rows, runErr := RunChaos(ctx, cfg)
	took := time.Since(started)
	if len(rows) == 0 {
		return nil, runErr
	}
	fmt.Fprintln(w)
	WriteChaosTable(w, rows)
	fmt.Fprintf(w, "\n%s\nseed %d; took %s\n", chaosLegend, cfg.Seed, took.Round(time.Second))

	var js, md bytes.Buffer
	rep := struct {
		Started time.Time  `json:"started"`
		Host    string     `json:"host"`
		Seed    uint64     `json:"seed"`
		TookMs  float64    `json:"took_ms"`
		Rows    []ChaosRow `json:"rows"`
	}{started.UTC(), bench.HostInfo(), cfg.Seed, report.Ms(took), rows}
	if err := report.JSON(&js, rep); err != nil {
		return rows, err
	}
	fmt.Fprintf(&md, "# Lock ladder fault suite, %s\n\n- host: %s\n- seed: %d, took %s\n\n",
		started.UTC().Format("2006-01-02 15:04:05 MST"), bench.HostInfo(), cfg.Seed, took.Round(time.Second))
	writeChaosMarkdown(&md, rows)
	fmt.Fprintf(&md, "\n%s\n", chaosLegend)
	jsonPath, mdPath, err := report.WriteFiles(dir, "chaos-"+started.Format("20060102-150405"), "chaos-latest", js.Bytes(), md.Bytes())
	if err != nil {
		return rows, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n", jsonPath, mdPath)
	return rows, runErr
}
