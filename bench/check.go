package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/inventory"
)

// judgeOne reads the lab's item back after a run, checks the history and
// the sections, and judges row.
func (h *harness) judgeOne(ctx context.Context, row *Row, ops []history.Op, since time.Time) error {
	c, err := h.stock(ctx, row.Lock, "")
	if err != nil {
		return err
	}
	row.Remaining, row.Sold, row.Num = *c.Stock, *c.Sold, *c.Num
	if err := h.checkHistory(row, ops); err != nil {
		return err
	}
	if err := h.checkSections(ctx, row, since); err != nil {
		return err
	}
	Judge(row)
	return nil
}

// checkHistory judges the operations of one item (those of a run on the
// lab's item, or of one of its items) with the history checker, into row
// (read by Judge). The HTML view of an illegal history goes to
// Config.HistoryDir.
func (h *harness) checkHistory(row *Row, ops []history.Op) error {
	history.AssignClients(ops)
	kind, initial := history.Sale, row.Initial
	if row.Endpoint == EndpointTestLock {
		kind, initial = history.Increment, 0 // the reset zeroes num
	}
	row.PossiblyApplied = 0
	for _, op := range ops {
		if op.Outcome == history.Unknown {
			row.PossiblyApplied++
		}
	}
	// The counters read back close the history, after every answer.
	var end int64
	reader := 0 // a client of its own
	for _, op := range ops {
		end, reader = max(end, op.Return), max(reader, op.Client+1)
	}
	final := row.Remaining
	if kind == history.Increment {
		final = row.Num
	}
	ops = append(ops, history.Op{Client: reader, Call: end + 1, Return: end + 2, Code: 200, Outcome: history.Read, Value: final})
	res := history.Check(kind, initial, ops, h.cfg.CheckTimeout)
	row.Linearizable, row.Evidence, row.Visualization = string(res.Linearizable), res.Evidence, ""
	if res.Linearizable == history.Illegal && res.HasVisualization() && h.cfg.HistoryDir != "" {
		path, err := writeVisualization(h.cfg.HistoryDir, *row, res)
		if err != nil {
			return err
		}
		row.Visualization = path
	}
	return nil
}

// checkSections counts the overlapping critical sections (of one key) the
// instances report since the run began, of the run's own requests, into
// row.
func (h *harness) checkSections(ctx context.Context, row *Row, since time.Time) error {
	row.Sections, row.Overlaps, row.Held = -1, 0, nil
	if len(h.cfg.Instances) == 0 {
		return nil
	}
	var secs []contract.Section
	complete := true
	// The run's own sections are those of its scope's keys: another's
	// request under the same lock (one admitted before the run took the
	// guard) holds the lab's.
	mark := inventory.ScopeMark(h.lease.Scope())
	for _, base := range h.cfg.Instances {
		// An instance answers a page of sections at a time, and where
		// the next begins.
		for from := since.UnixNano(); ; {
			var got struct {
				Complete bool               `json:"complete"`
				Sections []contract.Section `json:"sections"`
				Next     int64              `json:"next"`
			}
			path := "/sections?since=" + strconv.FormatInt(from, 10)
			if err := h.callURL(ctx, "GET", base+path, &got); err != nil {
				complete = false // restarting, say: what the others held still counts
				break
			}
			complete = complete && got.Complete
			for _, s := range got.Sections {
				if s.Lock == row.Lock && strings.Contains(s.Key, mark) {
					secs = append(secs, s)
				}
			}
			if got.Next == 0 {
				break
			}
			if got.Next <= from {
				complete = false // a page that does not move on
				break
			}
			from = got.Next
		}
	}
	row.Overlaps = history.Overlaps(secs)
	row.Sections = len(secs)
	slices.SortStableFunc(secs, func(a, b contract.Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	row.Held = secs
	if !complete {
		row.Sections = -2
	}
	return nil
}

// writeVisualization writes porcupine's view of res beside the reports.
func writeVisualization(dir string, row Row, res history.Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	name := strings.Join([]string{"history", row.Scenario, row.Lock, row.Endpoint, time.Now().Format("20060102-150405.000")}, "-")
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == ' ' {
			return '_'
		}
		return r
	}, name) + ".html"
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	if err := res.Visualize(f); err != nil {
		f.Close()
		return "", fmt.Errorf("history: %s: %w", path, err)
	}
	return path, f.Close()
}
