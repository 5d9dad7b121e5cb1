package bench

import (
	"bufio"
	"io"
	"slices"
	"strconv"

	"github.com/lockladder/lockladder/internal/report"
)

// BriefKey is the key under WritePairs's table: what its counts mean,
// and where every column is.
const BriefKey = "oversold = sold beyond the stock, lost = increments the counter lost (both SAFE at 0). " +
	"Every column (latencies, waits, overlaps, history) is in the reports below; the key: docs/reading-results.md."

// WritePairs writes rows for the terminal one line per lock, its
// endpoints side by side (in the order the rows first name them): each
// endpoint's throughput, p99, the count that judges it (oversold on
// /sale, lost on /testLock) and its verdict. It is make demo's table:
// half WriteTable's lines, which the reports keep in full.
func WritePairs(w io.Writer, rows []Row) error {
	var locks, endpoints []string
	byPair := map[[2]string]Row{}
	for _, r := range rows {
		if !slices.Contains(locks, r.Lock) {
			locks = append(locks, r.Lock)
		}
		if !slices.Contains(endpoints, r.Endpoint) {
			endpoints = append(endpoints, r.Endpoint)
		}
		byPair[[2]string{r.Lock, r.Endpoint}] = r
	}
	head := []string{"lock"}
	right := map[int]bool{}
	for _, ep := range endpoints {
		right[len(head)], right[len(head)+1], right[len(head)+2] = true, true, true
		head = append(head, ep+" req/s", "p99 ms", judgedBy(ep), "verdict")
	}
	lines := [][]string{head, nil}
	for _, lock := range locks {
		line := []string{lock}
		for _, ep := range endpoints {
			r, ok := byPair[[2]string{lock, ep}]
			switch {
			case !ok:
				line = append(line, "", "", "", "")
			case r.NotRun != "":
				line = append(line, "-", "-", "-", r.Verdict)
			default:
				line = append(line, strconv.FormatFloat(r.RPS, 'f', 0, 64), report.MsCell(r.P99Ms), judgedCell(r), r.Verdict)
			}
		}
		lines = append(lines, line)
	}
	bw := bufio.NewWriter(w)
	report.Aligned(bw, lines, func(i int) bool { return right[i] })
	return bw.Flush()
}

// judgedBy is the head of the count that judges a run on endpoint.
func judgedBy(endpoint string) string {
	if endpoint == EndpointTestLock {
		return "lost"
	}
	return "oversold"
}

// judgedCell is that count for r.
func judgedCell(r Row) string {
	if r.Endpoint == EndpointTestLock {
		return strconv.FormatInt(r.LostUpdates, 10)
	}
	return strconv.FormatInt(r.Oversold, 10)
}
