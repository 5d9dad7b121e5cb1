package bench

import "strings"

// The verdicts a row can carry.
const (
	VerdictSafe        = "SAFE"
	VerdictOversold    = "OVERSOLD"
	VerdictLostUpdates = "LOST UPDATES"
	VerdictDeadlock    = "DEADLOCK"
)

// Judge computes r.Oversold, r.LostUpdates and r.Verdict from the fields read
// back after the run (Initial, Remaining, Num) and the 200s counted (OK), as
// ladder.md "The verdicts" defines them. It is pure and idempotent.
//
// For /sale: oversold = ok - (initial - remaining), the sales answered 200
// beyond the stock that actually left the shelf. SAFE needs oversold == 0,
// remaining >= 0 and ok <= initial; anything else is OVERSOLD. A negative
// oversold (stock gone without a 200 reaching the client) is also not SAFE:
// the books do not balance.
//
// For /testLock: lost updates = ok - num, increments answered 200 that the
// counter does not hold. SAFE needs 0, else LOST UPDATES.
//
// A run whose counters balance but that stalled longer than its bound
// (StallBoundMs > 0 and StallMs > StallBoundMs) is DEADLOCK: after a fault
// nothing got through the lock any more. Safety is judged first: a run that
// both oversold and stalled is OVERSOLD.
//
// Any other endpoint leaves both counts at 0 and the verdict empty.
func Judge(r *Row) {
	if r == nil {
		return
	}
	r.Oversold, r.LostUpdates, r.Verdict = 0, 0, ""
	ok := int64(r.OK)
	switch strings.TrimPrefix(r.Endpoint, "/") {
	case EndpointSale:
		r.Oversold = ok - (r.Initial - r.Remaining)
		if r.Oversold == 0 && r.Remaining >= 0 && ok <= r.Initial {
			r.Verdict = VerdictSafe
		} else {
			r.Verdict = VerdictOversold
		}
	case EndpointTestLock:
		r.LostUpdates = ok - r.Num
		if r.LostUpdates == 0 {
			r.Verdict = VerdictSafe
		} else {
			r.Verdict = VerdictLostUpdates
		}
	}
	if r.Verdict == VerdictSafe && r.StallBoundMs > 0 && r.StallMs > r.StallBoundMs {
		r.Verdict = VerdictDeadlock
	}
}

// The marks of a verdict against the ladder's: the one expected, another,
// and a pair not run (the grid lists why).
const (
	MarkExpected   = "✓"
	MarkUnexpected = "✗"
	MarkSkipped    = "-"
)

// mark is "✓" when r's verdict is the expected one, else "✗ want EXPECTED".
func mark(r Row) string {
	if r.Verdict == r.Expected {
		return MarkExpected
	}
	return MarkUnexpected + " want " + r.Expected
}
