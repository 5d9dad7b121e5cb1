package bench_test

import (
	"testing"

	"github.com/lockladder/lockladder/bench"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name        string
		row         bench.Row
		oversold    int64
		lost        int64
		wantVerdict string
	}{
		// /sale: oversold = the sales beyond the stock, never below 0
		{"sale sold out exactly", bench.Row{Endpoint: "sale", OK: 1000, Initial: 1000, Remaining: 0, Sold: 1000}, 0, 0, bench.VerdictSafe},
		{"sale some left", bench.Row{Endpoint: "sale", OK: 300, Initial: 1000, Remaining: 700, Sold: 300}, 0, 0, bench.VerdictSafe},
		{"sale nothing sold", bench.Row{Endpoint: "sale", OK: 0, Initial: 1000, Remaining: 1000}, 0, 0, bench.VerdictSafe},
		{"sale empty stock", bench.Row{Endpoint: "sale", OK: 0, Initial: 0, Remaining: 0}, 0, 0, bench.VerdictSafe},
		{"sale leading slash", bench.Row{Endpoint: "/sale", OK: 10, Initial: 10, Remaining: 0, Sold: 10}, 0, 0, bench.VerdictSafe},
		{"sale oversold, stock at zero", bench.Row{Endpoint: "sale", OK: 4870, Initial: 1000, Remaining: 0}, 3870, 0, bench.VerdictOversold},
		{"sale oversold, stock left", bench.Row{Endpoint: "sale", OK: 900, Initial: 1000, Remaining: 200}, 100, 0, bench.VerdictOversold},
		{"sale negative remaining, books balance", bench.Row{Endpoint: "sale", OK: 1002, Initial: 1000, Remaining: -2}, 2, 0, bench.VerdictOversold},
		{"sale negative remaining and oversold", bench.Row{Endpoint: "sale", OK: 1500, Initial: 1000, Remaining: -5}, 495, 0, bench.VerdictOversold},
		{"sale ok above initial", bench.Row{Endpoint: "sale", OK: 11, Initial: 10, Remaining: -1}, 1, 0, bench.VerdictOversold},
		{"sale stock gone without a 200", bench.Row{Endpoint: "sale", OK: 5, Initial: 10, Remaining: 3}, 0, 0, bench.VerdictOversold},
		{"sale sold counter ahead of the shelf", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Remaining: 0, Sold: 11}, 1, 0, bench.VerdictOversold},
		{"sale ignores num", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Remaining: 0, Sold: 10, Num: 3}, 0, 0, bench.VerdictSafe},
		// /testLock: lost = ok - num
		{"testLock all kept", bench.Row{Endpoint: "testLock", OK: 5000, Num: 5000}, 0, 0, bench.VerdictSafe},
		{"testLock nothing", bench.Row{Endpoint: "testLock"}, 0, 0, bench.VerdictSafe},
		{"testLock some 503s", bench.Row{Endpoint: "testLock", OK: 4990, Num: 4990, Codes: map[string]int{"503": 10}}, 0, 0, bench.VerdictSafe},
		{"testLock lost", bench.Row{Endpoint: "testLock", OK: 5000, Num: 1322}, 0, 3678, bench.VerdictLostUpdates},
		{"testLock more increments than 200s", bench.Row{Endpoint: "testLock", OK: 10, Num: 12}, 0, 0, bench.VerdictLostUpdates},
		{"testLock ignores stock", bench.Row{Endpoint: "testLock", OK: 7, Num: 7, Initial: 10, Remaining: 99}, 0, 0, bench.VerdictSafe},
		// DEADLOCK: the books balance but nothing got through for longer than the bound.
		{"deadlock", bench.Row{Endpoint: "sale", OK: 60, Initial: 150, Remaining: 90, Sold: 60, StallMs: 3012.5, StallBoundMs: 3000}, 0, 0, bench.VerdictDeadlock},
		{"deadlock testLock", bench.Row{Endpoint: "testLock", OK: 60, Num: 60, StallMs: 3200, StallBoundMs: 3000}, 0, 0, bench.VerdictDeadlock},
		{"stall within the bound", bench.Row{Endpoint: "sale", OK: 150, Initial: 150, Sold: 150, StallMs: 2999, StallBoundMs: 3000}, 0, 0, bench.VerdictSafe},
		{"long stall, no bound", bench.Row{Endpoint: "sale", OK: 150, Initial: 150, Sold: 150, StallMs: 9000}, 0, 0, bench.VerdictSafe},
		// setnx under crash: the holder sold, died before its answer, and kept the lock.
		{"deadlock after a lost answer", bench.Row{Endpoint: "sale", Requests: 40, OK: 0, Initial: 300, Remaining: 299, Sold: 1, Codes: map[string]int{"502": 1, "503": 39}, StallMs: 3100, StallBoundMs: 3000}, 0, 0, bench.VerdictDeadlock},
		{"oversold beats deadlock", bench.Row{Endpoint: "sale", OK: 160, Initial: 150, StallMs: 5000, StallBoundMs: 3000}, 10, 0, bench.VerdictOversold},
		// A 503 for a Redis failure may have sold (its write landed, its answer timed out); never more than once.
		{"sale possibly applied under 503s", bench.Row{Endpoint: "sale", OK: 5, Initial: 10, Remaining: 2, Sold: 8, Codes: map[string]int{"503": 4}, PossiblyApplied: 4, Linearizable: "ok"}, 0, 0, bench.VerdictSafe},
		// With a history, a 502 that never reached an instance cannot account for a sale.
		{"sale gone behind 502s that reached nobody", bench.Row{Endpoint: "sale", OK: 8, Initial: 10, Remaining: 0, Sold: 10, Codes: map[string]int{"502": 2}, Linearizable: "ok"}, 0, 0, bench.VerdictOversold},
		{"sale gone behind 502s, no history", bench.Row{Endpoint: "sale", OK: 8, Initial: 10, Remaining: 0, Sold: 10, Codes: map[string]int{"502": 2}}, 0, 0, bench.VerdictSafe},
		{"sale applied twice for one request", bench.Row{Endpoint: "sale", OK: 5, Initial: 10, Remaining: 0, Sold: 10, Codes: map[string]int{"503": 4}, PossiblyApplied: 4, Linearizable: "ok"}, 0, 0, bench.VerdictOversold},
		// The history: counters that balance do not clear an illegal history or two writers at once.
		{"sale books balance, history illegal", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Sold: 10, Linearizable: "illegal"}, 0, 0, bench.VerdictOversold},
		{"testLock books balance, history illegal", bench.Row{Endpoint: "testLock", OK: 10, Num: 10, Linearizable: "illegal"}, 0, 0, bench.VerdictLostUpdates},
		{"sale books balance, sections overlap", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Sold: 10, Linearizable: "ok", Overlaps: 2, Sections: 10}, 0, 0, bench.VerdictOverlap},
		{"testLock overlap, lower bound", bench.Row{Endpoint: "testLock", OK: 10, Num: 10, Linearizable: "ok", Overlaps: 1, Sections: -2}, 0, 0, bench.VerdictOverlap},
		{"history unknown decides nothing", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Sold: 10, Linearizable: "unknown"}, 0, 0, bench.VerdictSafe},
		{"oversold beats overlap", bench.Row{Endpoint: "sale", OK: 11, Initial: 10, Sold: 11, Remaining: 0, Linearizable: "illegal", Overlaps: 3}, 1, 0, bench.VerdictOversold},
		{"overlap beats deadlock", bench.Row{Endpoint: "sale", OK: 60, Initial: 150, Remaining: 90, Sold: 60, Overlaps: 1, StallMs: 3012.5, StallBoundMs: 3000}, 0, 0, bench.VerdictOverlap},
		// Nothing got through the lock: balanced books prove nothing.
		{"sale every answer a 503", bench.Row{Endpoint: "sale", Requests: 600, Initial: 200, Remaining: 200, Codes: map[string]int{"503": 600}}, 0, 0, bench.VerdictUnserved},
		{"testLock every answer a 503", bench.Row{Endpoint: "testLock", Requests: 600, Codes: map[string]int{"503": 600}}, 0, 0, bench.VerdictUnserved},
		{"nothing served, stalled past the bound", bench.Row{Endpoint: "sale", Requests: 30, Initial: 50, Remaining: 50, Codes: map[string]int{"502": 4, "503": 26}, StallMs: 3100, StallBoundMs: 3000}, 0, 0, bench.VerdictDeadlock},
		{"sale sold out under the lock is served", bench.Row{Endpoint: "sale", Requests: 5, Codes: map[string]int{"409": 5}}, 0, 0, bench.VerdictSafe},
		{"not run keeps its verdict", bench.Row{Endpoint: "sale", NotRun: "no server", Verdict: bench.VerdictNotRun}, 0, 0, bench.VerdictNotRun},
		// Stale results are replaced, not kept.
		{"stale fields recomputed", bench.Row{Endpoint: "sale", OK: 10, Initial: 10, Sold: 10, Oversold: 9, LostUpdates: 9, Verdict: "OVERSOLD"}, 0, 0, bench.VerdictSafe},
		{"unknown endpoint", bench.Row{Endpoint: "buy", OK: 10, Oversold: 3, Verdict: "SAFE"}, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row
			bench.Judge(&r)
			if r.Oversold != tt.oversold || r.LostUpdates != tt.lost || r.Verdict != tt.wantVerdict {
				t.Errorf("got oversold %d, lost %d, %q; want %d, %d, %q",
					r.Oversold, r.LostUpdates, r.Verdict, tt.oversold, tt.lost, tt.wantVerdict)
			}
			if r.Oversold < 0 || r.LostUpdates < 0 || r.LostAnswers < 0 {
				t.Errorf("a negative count: oversold %d, lost updates %d, lost answers %d", r.Oversold, r.LostUpdates, r.LostAnswers)
			}
			again := r
			bench.Judge(&again)
			if again.Oversold != r.Oversold || again.LostUpdates != r.LostUpdates || again.Verdict != r.Verdict {
				t.Errorf("Judge is not idempotent: %+v then %+v", r, again)
			}
			if r.OK != tt.row.OK || r.Initial != tt.row.Initial || r.Remaining != tt.row.Remaining || r.Num != tt.row.Num {
				t.Errorf("Judge changed an input field: %+v", r)
			}
		})
	}
	bench.Judge(nil) // must not panic
}

// A crash can lose the answer of a sale that happened: the books balance
// through the sold counter and the requests the app never answered, and
// the sold counter still catches an item sold twice.
func TestJudgeLostAnswers(t *testing.T) {
	tests := []struct {
		name    string
		row     bench.Row
		verdict string
		answers int64
	}{
		{"sale answer lost with a 502", bench.Row{Endpoint: "sale", OK: 150, Initial: 1000, Remaining: 849, Sold: 151,
			Codes: map[string]int{"502": 4850}}, bench.VerdictSafe, 1},
		{"sale answers lost with transport errors", bench.Row{Endpoint: "sale", OK: 148, Initial: 1000, Remaining: 849, Sold: 151,
			Codes: map[string]int{"error": 2, "504": 1}}, bench.VerdictSafe, 3},
		{"sold counter disagrees with the shelf", bench.Row{Endpoint: "sale", OK: 150, Initial: 1000, Remaining: 849, Sold: 150,
			Codes: map[string]int{"502": 4850}}, bench.VerdictOversold, 0},
		{"more missing than unanswered", bench.Row{Endpoint: "sale", OK: 140, Initial: 1000, Remaining: 849, Sold: 151,
			Codes: map[string]int{"502": 5}}, bench.VerdictOversold, 0},
		{"503s are answers", bench.Row{Endpoint: "sale", OK: 150, Initial: 1000, Remaining: 849, Sold: 151,
			Codes: map[string]int{"503": 100}}, bench.VerdictOversold, 0},
		// Two sales of one item, one of whose answers was lost: the 200s
		// match the shelf, the sold counter does not.
		{"double sale hidden by a lost answer", bench.Row{Endpoint: "sale", OK: 150, Initial: 1000, Remaining: 850, Sold: 151,
			Codes: map[string]int{"502": 1}}, bench.VerdictOversold, 0},
		// No counter beside num: a lost answer and a lost update look alike.
		{"testLock num ahead of the 200s", bench.Row{Endpoint: "testLock", OK: 10, Num: 12,
			Codes: map[string]int{"error": 2}}, bench.VerdictLostUpdates, 0},
		{"testLock more increments than unanswered", bench.Row{Endpoint: "testLock", OK: 10, Num: 12,
			Codes: map[string]int{"error": 1}}, bench.VerdictLostUpdates, 0},
		{"lost answer then a stall", bench.Row{Endpoint: "sale", OK: 20, Initial: 150, Remaining: 129, Sold: 21,
			Codes: map[string]int{"502": 1, "503": 160}, StallMs: 3100, StallBoundMs: 3000}, bench.VerdictDeadlock, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row
			bench.Judge(&r)
			if r.Verdict != tt.verdict || r.LostAnswers != tt.answers {
				t.Errorf("got %s with %d answers lost, want %s with %d (row %+v)", r.Verdict, r.LostAnswers, tt.verdict, tt.answers, r)
			}
			if r.Oversold < 0 || r.LostUpdates < 0 || r.LostAnswers < 0 {
				t.Errorf("a negative count: oversold %d, lost updates %d, lost answers %d", r.Oversold, r.LostUpdates, r.LostAnswers)
			}
			again := r
			bench.Judge(&again)
			if again.Verdict != r.Verdict || again.LostAnswers != r.LostAnswers {
				t.Errorf("Judge is not idempotent: %+v then %+v", r, again)
			}
		})
	}
}
