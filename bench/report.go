package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/internal/report"
)

// Meta describes the conditions of a benchmark, for the reports.
type Meta struct {
	Started     time.Time `json:"started"`
	URL         string    `json:"url"`
	Requests    int       `json:"requests"`
	Concurrency int       `json:"concurrency"`
	Stock       int       `json:"stock"`
	SKUs        int       `json:"skus,omitempty"`  // items each run spread over (0: the lab's one)
	Host        string    `json:"host"`            // e.g. "2 cores, linux/amd64"
	Notes       []string  `json:"notes,omitempty"` // free text, one item each
}

// NewMeta fills a Meta from cfg (defaults applied), started and HostInfo.
// Compare is Run, WriteTable, NewMeta and WriteReports; a caller that runs
// its own way writes the same reports with the last two (ExampleRun).
func NewMeta(cfg Config, started time.Time) Meta {
	if n, err := cfg.Normalize(); err == nil {
		cfg = n
	}
	return Meta{
		Started:     started,
		URL:         cfg.URL,
		Requests:    cfg.Requests,
		Concurrency: cfg.Concurrency,
		Stock:       cfg.Stock,
		SKUs:        cfg.SKUs,
		Host:        HostInfo(),
	}
}

// HostInfo describes the machine running the benchmark: "2 cores, linux/amd64".
func HostInfo() string {
	cores := "cores"
	if runtime.NumCPU() == 1 {
		cores = "core"
	}
	return fmt.Sprintf("%d %s, %s/%s", runtime.NumCPU(), cores, runtime.GOOS, runtime.GOARCH)
}

// column is one column of the table and of the Markdown report.
type column struct {
	head  string
	right bool // numbers align right
	cell  func(Row) string
}

var columns = []column{
	{"lock", false, func(r Row) string { return r.Lock }},
	{"endpoint", false, func(r Row) string { return r.Endpoint }},
	{"requests", true, func(r Row) string { return strconv.Itoa(r.Requests) }},
	{"ok", true, func(r Row) string { return strconv.Itoa(r.OK) }},
	{"other", false, func(r Row) string { return report.Counts(r.Codes) }},
	{"sold", true, func(r Row) string { return countCell(r, EndpointSale, r.Sold) }},
	{"remaining", true, func(r Row) string { return countCell(r, EndpointSale, r.Remaining) }},
	{"num", true, func(r Row) string { return countCell(r, EndpointTestLock, r.Num) }},
	{"oversold", true, func(r Row) string { return countCell(r, EndpointSale, r.Oversold) }},
	{"lost", true, func(r Row) string { return countCell(r, EndpointTestLock, r.LostUpdates) }},
	{"req/s", true, func(r Row) string { return strconv.FormatFloat(r.RPS, 'f', 0, 64) }},
	{"p50 ms", true, func(r Row) string { return report.MsCell(r.P50Ms) }},
	{"p99 ms", true, func(r Row) string { return report.MsCell(r.P99Ms) }},
	{"max ms", true, func(r Row) string { return report.MsCell(r.MaxMs) }},
	{"wait max ms", true, waitCell},
	{"history", false, func(r Row) string { return orDash(r.Linearizable) }},
	{"overlaps", true, overlapsCell},
	{"verdict", false, func(r Row) string { return r.Verdict }},
}

// scenarioRows reports whether rows come from scenario runs (a matrix):
// then the tables gain the scenario, the stall and the expected verdict.
func scenarioRows(rows []Row) bool {
	for _, r := range rows {
		if r.Expected != "" || r.StallBoundMs > 0 || (r.Scenario != "" && r.Scenario != ScenarioNormal) {
			return true
		}
	}
	return false
}

// itemRows reports whether some of rows were spread over items: then the
// tables gain the items and the sales per cluster master.
func itemRows(rows []Row) bool {
	for _, r := range rows {
		if len(r.Items) > 0 {
			return true
		}
	}
	return false
}

// itemColumns: how many items a run spread over, and its 200s per Redis
// Cluster master, in address order ("-" on one Redis).
var itemColumns = []column{
	{"items", true, func(r Row) string { return strconv.Itoa(max(len(r.Items), 1)) }},
	{"ok per master", false, func(r Row) string {
		if len(r.Masters) == 0 {
			return "-"
		}
		var cells []string
		for _, m := range slices.Sorted(maps.Keys(r.Masters)) {
			cells = append(cells, strconv.Itoa(r.Masters[m]))
		}
		return strings.Join(cells, "/")
	}},
}

// columnsFor returns the columns for rows: the plain ones, or for scenario
// runs the scenario first and the stall and expected verdict before the
// verdict, which stays last; runs spread over items add the items and
// the sales per master after the endpoint.
func columnsFor(rows []Row) []column {
	plain := columns
	if itemRows(rows) {
		plain = slices.Concat(columns[:2], itemColumns, columns[2:])
	}
	if !scenarioRows(rows) {
		return plain
	}
	cols := []column{{"scenario", false, func(r Row) string { return r.Scenario }}}
	cols = append(cols, plain[:len(plain)-1]...)
	cols = append(cols,
		column{"armed", false, func(r Row) string { return report.Counts(r.Armed) }},
		column{"stall ms", true, func(r Row) string {
			s := report.MsCell(r.StallMs)
			if r.Stopped {
				s += " stopped"
			}
			return s
		}},
		column{"expected", false, func(r Row) string { return r.Expected }},
		plain[len(plain)-1],
	)
	return cols
}

// show is c's cell for r; a row that was not run shows only its lock,
// endpoint and verdict.
func (c column) show(r Row) string {
	if r.NotRun != "" {
		switch c.head {
		case "lock", "endpoint", "scenario", "verdict", "expected":
		default:
			return "-"
		}
	}
	return c.cell(r)
}

// NotRunLines says, one line per lock, why rows were not run ("not run:
// zookeeper: ..."); Compare prints them under the table.
func NotRunLines(rows []Row) []string {
	var lines []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.NotRun != "" && !seen[r.Lock] {
			seen[r.Lock] = true
			lines = append(lines, fmt.Sprintf("not run: %s: %s", r.Lock, r.NotRun))
		}
	}
	return lines
}

// countCell shows a verdict count only on the endpoint it belongs to.
func countCell(r Row, endpoint string, n int64) string {
	if strings.TrimPrefix(r.Endpoint, "/") != endpoint {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// waitCell is the longest wait for the lock at each instance, in the
// instances' name order ("12/15/14"), "-" for a lock nobody waited for.
func waitCell(r Row) string {
	if len(r.MaxWaitMs) == 0 {
		return "-"
	}
	var cells []string
	for _, inst := range slices.Sorted(maps.Keys(r.MaxWaitMs)) {
		cells = append(cells, strconv.FormatFloat(r.MaxWaitMs[inst], 'f', 0, 64))
	}
	return strings.Join(cells, "/")
}

// overlapsCell is the overlapping sections, "-" when the instances were
// not asked, with a "+" when some had forgotten sections or did not answer
// (a lower bound).
func overlapsCell(r Row) string {
	switch {
	case r.Sections == -1:
		return "-"
	case r.Sections == -2:
		return strconv.Itoa(r.Overlaps) + "+"
	}
	return strconv.Itoa(r.Overlaps)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteTable writes rows as an aligned text table for the terminal.
//
// Rows from scenario runs (a matrix) also show the scenario, the stall and
// the expected verdict.
func WriteTable(w io.Writer, rows []Row) error {
	columns := columnsFor(rows)
	lines := make([][]string, 0, len(rows)+2)
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.head
	}
	lines = append(lines, head, nil) // nil: the rule under the head
	for _, r := range rows {
		line := make([]string, len(columns))
		for i, c := range columns {
			line[i] = c.show(r)
		}
		lines = append(lines, line)
	}
	bw := bufio.NewWriter(w)
	report.Aligned(bw, lines, func(i int) bool { return columns[i].right })
	return bw.Flush()
}

// ReportRows returns rows as the reports encode them: a missing map as
// {}, never null. Package suite's matrix report embeds rows so.
func ReportRows(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		if r.Codes == nil {
			r.Codes = map[string]int{}
		}
		if r.Instances == nil {
			r.Instances = map[string]int{}
		}
		out[i] = r
	}
	return out
}

// ShortKey is the key under the table in the terminal: the long one
// (legend) is in the reports, and in docs/reading-results.md.
const ShortKey = "oversold = sold beyond the stock, lost = increments the counter lost (both SAFE at 0); " +
	"overlaps = sections that wrote while another holder was inside; history = porcupine's check of the answers. " +
	"The full key: docs/reading-results.md, and under the table in the reports."

// legend explains the table's derived columns; WriteMarkdown prints it
// under the table.
const legend = "oversold = the sales beyond the stock, never below 0: ok - (initial - remaining), the sold counter beyond it, or the stock below 0, the most of them, on /sale (SAFE needs 0, remaining >= 0, and sold = initial - remaining: " +
	"the sold counter, INCRed with each sale's write, counts an item sold twice twice); " +
	"lost = ok - num on /testLock, never below 0 (SAFE needs ok = num); other = non-200 answers by status, error = transport error; " +
	"latencies in ms per request; wait max ms = per instance (in name order), the longest a request that got the lock waited for it, as the app measured it; history = porcupine's check that some order of the requests explains every answer " +
	"(ok, illegal: OVERSOLD or LOST UPDATES whatever the counters say, unknown: out of time), each request without a definite answer " +
	"counted as possibly applied; overlaps = critical sections the instances report that wrote while another holder of the lock " +
	"was inside (OVERLAP when nothing else shows; + a lower bound: an instance had forgotten some, - not asked); " +
	"UNSERVED = no request got through the lock (no 200, no sold out): the run shows nothing about it; " +
	"NOT RUN = the app cannot serve the lock here (its server is missing)."

// itemLegend adds what runs spread over items show.
const itemLegend = " items = how many items the run spread its requests over (sku=1..K, round robin), each judged on its own: " +
	"the counters are their totals, and the verdict is SAFE only when every item's is; " +
	"ok per master = the 200s per Redis Cluster master holding the items, in address order (- on one Redis)."

// scenarioLegend adds what scenario runs show to legend.
const scenarioLegend = legend + " stall ms = the longest time with no answer from inside the lock " +
	"(a 200, or on /sale a 409 sold out) after the first fault of the run, or over the whole run when it has none; " +
	"fewer 200s than the stock that left is SAFE only when the sold counter equals it and the missing 200s are " +
	"within the requests the app never answered (502, 504, error): answers lost with a crashed instance; " +
	"armed = the outcomes of the requests that carried the scenario's fault (one that answered 503 never held the lock, so its fault never struck); " +
	"DEADLOCK = books that balance but a stall past the scenario's bound (the run is then stopped); " +
	"expected = the ladder's verdict for the pair."

// FullKey is the whole key to the tables, every column and verdict, as a
// list: docs/reading-results.md carries it (a test keeps it so).
func FullKey() string {
	var b strings.Builder
	var items []string
	for _, part := range strings.Split(scenarioLegend+itemLegend, "; ") {
		// "... missing). stall ms = ...": a sentence that names a column
		// is an item of its own.
		for i, sentence := range strings.Split(part, ". ") {
			if i > 0 && strings.Contains(sentence, " = ") {
				items = append(items, sentence)
			} else if i > 0 {
				items[len(items)-1] += ". " + sentence
			} else {
				items = append(items, sentence)
			}
		}
	}
	for _, it := range items {
		b.WriteString("- " + strings.TrimSpace(it) + "\n")
	}
	return b.String()
}

// LegendFor is the legend that explains rows' columns, with what scenario
// runs show when rows come from them. WriteMarkdown prints it under the
// table; Compare and package suite under theirs.
func LegendFor(rows []Row) string {
	l := legend
	if scenarioRows(rows) {
		l = scenarioLegend
	}
	if itemRows(rows) {
		l += itemLegend
	}
	return l
}

// WriteMarkdown writes rows as a Markdown table, numbers right-aligned and
// unsafe verdicts in bold, followed by a one-line legend.
func WriteMarkdown(w io.Writer, rows []Row) error {
	columns := columnsFor(rows)
	bw := bufio.NewWriter(w)
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.head
	}
	report.MarkdownHead(bw, head, func(i int) bool { return columns[i].right })
	for _, r := range rows {
		line := make([]string, len(columns))
		for i, c := range columns {
			line[i] = report.MarkdownEscape(c.show(r))
		}
		if v := line[len(line)-1]; v != "" && r.Verdict != VerdictSafe {
			line[len(line)-1] = "**" + v + "**"
		}
		if i := lockColumn(columns); line[i] != "" {
			line[i] = "`" + line[i] + "`"
		}
		report.MarkdownRow(bw, line)
	}
	if lines := NotRunLines(rows); len(lines) > 0 {
		fmt.Fprintf(bw, "\n%s\n", strings.Join(lines, "  \n"))
	}
	fmt.Fprintf(bw, "\n%s\n", LegendFor(rows))
	return bw.Flush()
}

func lockColumn(cols []column) int {
	for i, c := range cols {
		if c.head == "lock" {
			return i
		}
	}
	return 0
}

// reportFile is the JSON report file.
type reportFile struct {
	Meta Meta  `json:"meta"`
	Rows []Row `json:"rows"`
}

// WriteReports writes results/bench-YYYYMMDD-HHMMSS.{json,md} (from
// meta.Started, now if zero) into dir, creating dir if needed, and copies
// them to latest.{json,md}. A second report in the same second gets a
// "-2", "-3"... suffix instead of overwriting the first. The JSON file is
// {"meta":{...},"rows":[...]}; the Markdown file has a title, the meta as
// a list, the table and the legend. Compare writes them; so may a caller
// that runs its own way (see NewMeta).
func WriteReports(dir string, rows []Row, meta Meta) (jsonPath, mdPath string, err error) {
	if meta.Started.IsZero() {
		meta.Started = time.Now()
	}
	var js, md bytes.Buffer
	if err := report.JSON(&js, reportFile{Meta: meta, Rows: ReportRows(rows)}); err != nil {
		return "", "", fmt.Errorf("bench: encoding the JSON report: %w", err)
	}
	writeMarkdownReport(&md, rows, meta)
	return report.WriteFiles(dir, "bench-"+meta.Started.Format("20060102-150405"), "latest", js.Bytes(), md.Bytes())
}

func writeMarkdownReport(w io.Writer, rows []Row, meta Meta) {
	fmt.Fprintf(w, "# Lock ladder benchmark, %s\n\n", meta.Started.Format("2006-01-02 15:04:05 MST"))
	meta.WriteList(w)
	fmt.Fprintln(w)
	WriteMarkdown(w, rows) // in-memory writer: no error
}

// WriteList writes meta as a Markdown list: the target (if any), the load,
// the host (if known), then each note. Package suite's reports open so.
func (meta Meta) WriteList(w io.Writer) {
	if meta.URL != "" {
		fmt.Fprintf(w, "- target: %s\n", meta.URL)
	}
	fmt.Fprintf(w, "- load: %d requests per run, %d concurrent (closed loop), stock reset to %d before each run\n",
		meta.Requests, meta.Concurrency, meta.Stock)
	if meta.SKUs > 0 {
		fmt.Fprintf(w, "- items: each run spread over %d items (sku=1..%d, round robin), each with that stock, each judged on its own\n",
			meta.SKUs, meta.SKUs)
	}
	if meta.Host != "" {
		fmt.Fprintf(w, "- host: %s\n", meta.Host)
	}
	for _, n := range meta.Notes {
		fmt.Fprintf(w, "- %s\n", strings.ReplaceAll(n, "\n", " "))
	}
}
