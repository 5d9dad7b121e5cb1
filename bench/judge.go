package bench

import (
	"strings"

	"github.com/lockladder/lockladder/bench/history"
)

// The verdicts a row can carry.
const (
	VerdictSafe        = "SAFE"
	VerdictOversold    = "OVERSOLD"
	VerdictLostUpdates = "LOST UPDATES"
	VerdictDeadlock    = "DEADLOCK"
	// VerdictOverlap: the counters balance and every answer fits, but two
	// holders of the lock wrote at once: the lock broke its promise and
	// the damage missed this time.
	VerdictOverlap = "OVERLAP"
	// VerdictUnserved: no request got through the lock (no 200, and on
	// /sale no 409 sold out either): the run measured nothing about it.
	VerdictUnserved = "UNSERVED"
	// VerdictNotRun marks a row Run did not run: the app lists the lock as
	// unavailable (Row.NotRun says why).
	VerdictNotRun = "NOT RUN"
)

// Judge computes r.Oversold, r.LostUpdates, r.LostAnswers and r.Verdict
// from the fields read back after the run (Initial, Remaining, Sold, Num)
// and the answers counted (OK, Codes). It is pure and idempotent.
//
// For /sale: oversold counts the sales beyond the stock, never below
// zero: the 200s beyond the stock that left the shelf (ok - (initial -
// remaining)), the sales the sold counter holds beyond it, or the stock
// below zero, whichever is most. The sold counter settles
// what the answers cannot: every sale INCRs it with its SET (one pipeline,
// or one script), so two sales of the same item count twice in sold but
// once on the shelf. SAFE needs remaining >= 0 and sold == initial -
// remaining (no item sold twice, whatever answers got lost), and the 200s
// to account for every sale but those whose answer never came: 0 <=
// -oversold <= the requests that may have sold without saying so
// (PossiblyApplied: a 502 or 504 from the load balancer, a transport error,
// a 503 for a Redis failure after the write may have landed; an instance
// that crashed after selling, say). LostAnswers counts those sales.
// Anything else is OVERSOLD: a script Redis ran twice for one request, say.
//
// For /testLock: lost updates = ok - num (at least 0), increments
// answered 200 that the counter does not hold. SAFE needs 0, else LOST UPDATES. There is no
// counter beside num to tell an answer lost with a crash from an increment
// lost to a race (they cancel out), so a num ahead of the 200s is not SAFE
// either.
//
// The history comes next: a run whose counters balance is still OVERSOLD
// (LOST UPDATES on /testLock) when its history is illegal (Linearizable
// "illegal": no order of the requests explains every answer, two sales
// that left the same stock, say), and OVERLAP when the instances report
// critical sections of the lock that wrote at the same time (Overlaps > 0).
// An "unknown" history (the checker ran out of time) decides nothing.
//
// A run whose counters balance but that stalled longer than its bound
// (StallBoundMs > 0 and StallMs > StallBoundMs) is DEADLOCK: after a fault
// nothing got through the lock any more. Safety is judged first: a run that
// both oversold and stalled is OVERSOLD.
//
// A run in which no request got through the lock at all (every answer a
// 503, a 502 or an error) is UNSERVED whatever its counters say: balanced
// books prove nothing when nothing was sold. A stall past the bound says
// more, and wins: DEADLOCK.
//
// Any other endpoint leaves the counts at 0 and the verdict empty; a row
// that was not run keeps its verdict.
func Judge(r *Row) {
	if r == nil || r.NotRun != "" {
		return
	}
	r.Oversold, r.LostUpdates, r.LostAnswers, r.Verdict = 0, 0, 0, ""
	ok := int64(r.OK)
	switch strings.TrimPrefix(r.Endpoint, "/") {
	case EndpointSale:
		left := r.Initial - r.Remaining
		if r.Balanced() {
			r.Verdict, r.LostAnswers = VerdictSafe, left-ok
		} else {
			r.Verdict = VerdictOversold
			// Never below zero: a count of sales, not a difference.
			r.Oversold = max(ok-left, r.Sold-left, -r.Remaining, 0)
		}
	case EndpointTestLock:
		r.LostUpdates = max(ok-r.Num, 0)
		if ok == r.Num {
			r.Verdict = VerdictSafe
		} else {
			r.Verdict = VerdictLostUpdates
		}
	}
	if r.Verdict == VerdictSafe && r.Linearizable == string(history.Illegal) {
		r.Verdict = VerdictOversold
		if strings.TrimPrefix(r.Endpoint, "/") == EndpointTestLock {
			r.Verdict = VerdictLostUpdates
		}
	}
	if r.Verdict == VerdictSafe && r.Overlaps > 0 {
		r.Verdict = VerdictOverlap
	}
	if r.Verdict == VerdictSafe && r.StallBoundMs > 0 && r.StallMs > r.StallBoundMs {
		r.Verdict = VerdictDeadlock
	}
	if r.Verdict == VerdictSafe && r.Requests > 0 && r.OK == 0 && r.Codes["409"] == 0 {
		r.Verdict = VerdictUnserved
	}
}

// Balanced reports whether a /sale run's books balance: no stock below
// zero, the sold counter equal to the stock that left, and the 200s
// accounting for all of it but what the requests that may have sold
// without saying so can explain (MaybeApplied). Judge's first check;
// package suite's fault suite counts a run that fails it as a violation.
func (r *Row) Balanced() bool {
	left, ok := r.Initial-r.Remaining, int64(r.OK)
	return r.Remaining >= 0 && r.Sold == left && ok <= left && left-ok <= r.MaybeApplied()
}

// MaybeApplied counts the requests that may have sold without a 200:
// those the history found without a definite answer (a 502 that never
// reached an instance is not one), or, in a row with no history, every
// request the app never answered. The fault suite's retry trap weighs the
// stock gone against the 200s and these.
func (r *Row) MaybeApplied() int64 {
	if r.Linearizable != "" {
		return int64(r.PossiblyApplied)
	}
	return unanswered(r.Codes)
}

// unanswered counts the requests the app itself never answered: a 502 or
// 504 from the load balancer (the instance died or hung), or a transport
// error. Any of them may have sold before its answer was lost.
func unanswered(codes map[string]int) int64 {
	return int64(codes["502"] + codes["504"] + codes["error"])
}

// The marks of a verdict against the ladder's: the one expected, another,
// and a pair not run (package suite's grid lists why).
const (
	MarkExpected   = "✓"
	MarkUnexpected = "✗"
	MarkSkipped    = "-"
)

// Mark is "✓" when r's verdict is the expected one, else "✗ want
// EXPECTED"; the progress lines and package suite's grid show it.
func Mark(r Row) string {
	if r.Verdict == r.Expected {
		return MarkExpected
	}
	return MarkUnexpected + " want " + r.Expected
}
