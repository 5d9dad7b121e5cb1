package suite

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
)

// Summary counts the rows that carry an expected verdict and those whose
// verdict matches it: the "summary" of the matrix report's JSON, for
// whoever reads the report back (the tests do).
type Summary struct {
	Pairs      int      `json:"pairs"`
	AsExpected int      `json:"as_expected"`
	Unexpected []string `json:"unexpected"` // "slow lua/sale: SAFE, want OVERSOLD"
	Skipped    int      `json:"skipped"`
	TookMs     float64  `json:"took_ms"`
}

// summarize counts rows against their expected verdicts.
func summarize(rows []bench.Row, skips []Skip, took time.Duration) Summary {
	s := Summary{Skipped: len(skips), TookMs: report.Ms(took), Unexpected: []string{}}
	for _, r := range rows {
		if r.Expected == "" {
			continue
		}
		s.Pairs++
		if r.Verdict == r.Expected {
			s.AsExpected++
		} else {
			s.Unexpected = append(s.Unexpected, fmt.Sprintf("%s %s/%s: %s, want %s", r.Scenario, r.Lock, r.Endpoint, r.Verdict, r.Expected))
		}
	}
	return s
}

// line is "N of M pairs as the ladder expects; took T".
func (s Summary) line() string {
	line := fmt.Sprintf("%d of %d pairs as the ladder expects", s.AsExpected, s.Pairs)
	if s.TookMs > 0 {
		took := time.Duration(s.TookMs * float64(time.Millisecond))
		switch {
		case took >= time.Minute:
			took = took.Round(time.Second)
		case took >= time.Second:
			took = took.Round(100 * time.Millisecond)
		default:
			took = took.Round(time.Millisecond)
		}
		line += "; took " + took.String()
	}
	return line
}

// grid is the verdicts laid out: locks down, scenarios across.
type grid struct {
	scenarios []string
	labels    []string             // row labels: the lock, or lock/endpoint off /sale
	cells     map[[2]string]string // [label, scenario] -> cell
	skipped   [][3]string          // scenario, reason, locks
}

// label names a grid row: the lock for /sale, lock/endpoint otherwise.
func label(lock, endpoint string) string {
	if endpoint == "" || endpoint == bench.EndpointSale {
		return lock
	}
	return lock + "/" + endpoint
}

func newGrid(rows []bench.Row, skips []Skip, cell func(bench.Row) string) grid {
	g := grid{cells: map[[2]string]string{}}
	// Scenarios in the order of Scenarios(), any other after them.
	seen := map[string]bool{}
	addScenario := func(s string) {
		if !seen[s] {
			seen[s] = true
			g.scenarios = append(g.scenarios, s)
		}
	}
	present := map[string]bool{}
	for _, r := range rows {
		present[r.Scenario] = true
	}
	for _, s := range skips {
		present[s.Scenario] = true
	}
	for _, s := range ScenarioNames() {
		if present[s] {
			addScenario(s)
		}
	}
	for _, r := range rows {
		addScenario(r.Scenario)
	}
	for _, s := range skips {
		addScenario(s.Scenario)
	}

	// Locks in ladder order, any other after them; each lock's endpoints
	// in the order met.
	var locks []string
	endpoints := map[string][]string{}
	addLock := func(lock, ep string) {
		if _, ok := endpoints[lock]; !ok {
			locks = append(locks, lock)
			endpoints[lock] = nil
		}
		if ep != "" && !slices.Contains(endpoints[lock], ep) {
			endpoints[lock] = append(endpoints[lock], ep)
		}
	}
	for _, l := range LadderLocks() {
		for _, r := range rows {
			if r.Lock == l {
				addLock(l, r.Endpoint)
			}
		}
		for _, s := range skips {
			if s.Lock == l {
				addLock(l, "")
			}
		}
	}
	for _, r := range rows {
		addLock(r.Lock, r.Endpoint)
	}
	for _, s := range skips {
		addLock(s.Lock, "")
	}
	for _, l := range locks {
		eps := endpoints[l]
		if len(eps) == 0 {
			eps = []string{bench.EndpointSale}
		}
		for _, ep := range eps {
			g.labels = append(g.labels, label(l, ep))
		}
	}

	for _, r := range rows {
		g.cells[[2]string{label(r.Lock, r.Endpoint), r.Scenario}] = cell(r)
	}
	for _, s := range skips {
		for _, ep := range endpoints[s.Lock] {
			g.cells[[2]string{label(s.Lock, ep), s.Scenario}] = bench.MarkSkipped
		}
		if len(endpoints[s.Lock]) == 0 {
			g.cells[[2]string{s.Lock, s.Scenario}] = bench.MarkSkipped
		}
	}

	// Skipped pairs grouped by scenario and reason, in grid order.
	group := map[[2]string]int{}
	for _, sc := range g.scenarios {
		for _, s := range skips {
			if s.Scenario != sc {
				continue
			}
			k := [2]string{sc, s.Reason}
			if i, ok := group[k]; ok {
				g.skipped[i][2] += ", " + s.Lock
				continue
			}
			group[k] = len(g.skipped)
			g.skipped = append(g.skipped, [3]string{sc, s.Reason, s.Lock})
		}
	}
	return g
}

// gridCell is a run's cell: its verdict, and a mark when the ladder
// expects one.
func gridCell(r bench.Row) string {
	if r.Expected == "" {
		return r.Verdict
	}
	return r.Verdict + " " + bench.Mark(r)
}

// WriteGrid writes the matrix as a grid for the terminal: a row per lock
// in ladder order, a column per scenario, each cell the verdict measured
// with ✓ when the ladder expects it, "✗ want X" when it does not, and "-"
// for a pair not run; then the skipped pairs with their reasons, and a
// summary "N of M pairs as the ladder expects; took T" (took <= 0: no time).
func WriteGrid(w io.Writer, rows []bench.Row, skips []Skip, took time.Duration) error {
	g := newGrid(rows, skips, gridCell)
	lines := [][]string{append([]string{"lock"}, g.scenarios...), nil}
	for _, l := range g.labels {
		line := []string{l}
		for _, sc := range g.scenarios {
			line = append(line, g.cells[[2]string{l, sc}])
		}
		lines = append(lines, line)
	}
	bw := bufio.NewWriter(w)
	report.Aligned(bw, lines, nil)
	writeSkipped(bw, g, "")
	sum := summarize(rows, skips, took)
	fmt.Fprintf(bw, "\n%s\n", sum.line())
	for _, u := range sum.Unexpected {
		fmt.Fprintf(bw, "  %s %s\n", bench.MarkUnexpected, u)
	}
	return bw.Flush()
}

// writeSkipped lists the skipped pairs, one line per scenario and reason.
func writeSkipped(w io.Writer, g grid, bullet string) {
	if len(g.skipped) == 0 {
		return
	}
	n := 0
	for _, s := range g.skipped {
		n += strings.Count(s[2], ",") + 1
	}
	fmt.Fprintf(w, "\nskipped (%d pairs, %s in the grid):\n", n, bench.MarkSkipped)
	for _, s := range g.skipped {
		if bullet == "" {
			fmt.Fprintf(w, "  %s: %s: %s\n", s[0], s[2], s[1])
		} else {
			fmt.Fprintf(w, "%s%s: %s: %s\n", bullet, s[0], s[2], s[1])
		}
	}
}

// writeMarkdownGrid writes the grid as a Markdown table, unexpected
// verdicts in bold, then the skipped pairs as a list.
func writeMarkdownGrid(w io.Writer, rows []bench.Row, skips []Skip) {
	g := newGrid(rows, skips, func(r bench.Row) string {
		c := gridCell(r)
		if r.Expected != "" && r.Verdict != r.Expected {
			c = "**" + c + "**"
		}
		return c
	})
	report.MarkdownHead(w, append([]string{"lock"}, g.scenarios...), nil)
	for _, l := range g.labels {
		line := []string{"`" + report.MarkdownEscape(l) + "`"}
		for _, sc := range g.scenarios {
			line = append(line, report.MarkdownEscape(g.cells[[2]string{l, sc}]))
		}
		report.MarkdownRow(w, line)
	}
	writeSkipped(w, g, "- ")
}

// matrixReport is the JSON matrix report file.
type matrixReport struct {
	Meta    bench.Meta  `json:"meta"`
	Summary Summary     `json:"summary"`
	Rows    []bench.Row `json:"rows"`
	Skipped []Skip      `json:"skipped"`
}

// WriteMatrixReports writes matrix-YYYYMMDD-HHMMSS.{json,md} (from
// meta.Started, now if zero) into dir, creating it if needed, and copies
// them to matrix-latest.{json,md}; a second report in the same second gets
// a "-2" suffix. The JSON file is {"meta","summary","rows","skipped"},
// every row with its scenario, stall and expected verdict; the Markdown
// file has the grid, the skipped pairs, the rows and the legend.
// CompareMatrix writes them; so may a caller that runs RunMatrix its own
// way, as bench.WriteReports for the plain benchmark.
func WriteMatrixReports(dir string, rows []bench.Row, skips []Skip, meta bench.Meta, took time.Duration) (jsonPath, mdPath string, err error) {
	if meta.Started.IsZero() {
		meta.Started = time.Now()
	}
	if skips == nil {
		skips = []Skip{}
	}
	sum := summarize(rows, skips, took)
	var js, md bytes.Buffer
	if err := report.JSON(&js, matrixReport{Meta: meta, Summary: sum, Rows: bench.ReportRows(rows), Skipped: skips}); err != nil {
		return "", "", fmt.Errorf("bench: encoding the JSON report: %w", err)
	}

	fmt.Fprintf(&md, "# Lock ladder matrix, %s\n\n", meta.Started.Format("2006-01-02 15:04:05 MST"))
	meta.WriteList(&md)
	fmt.Fprintf(&md, "\n%s.\n\n## Verdicts\n\n", sum.line())
	writeMarkdownGrid(&md, rows, skips)
	for _, u := range sum.Unexpected {
		fmt.Fprintf(&md, "\nNot as expected: %s\n", u)
	}
	fmt.Fprint(&md, "\n## Runs\n\n")
	bench.WriteMarkdown(&md, rows) // in-memory writer: no error
	fmt.Fprint(&md, "\n## Scenarios\n\n")
	for _, s := range Scenarios() {
		fmt.Fprintf(&md, "- `%s`: %s\n", s.Name, s.About)
	}

	stem := "matrix-" + meta.Started.Format("20060102-150405")
	return report.WriteFiles(dir, stem, "matrix-latest", js.Bytes(), md.Bytes())
}
