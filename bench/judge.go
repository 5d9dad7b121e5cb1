package bench

import "strings"

// The verdicts a row can carry.
const (
	VerdictSafe        = "SAFE"
	VerdictOversold    = "OVERSOLD"
	VerdictLostUpdates = "LOST UPDATES"
	VerdictDeadlock    = "DEADLOCK"
)

// Judge computes r.Oversold, r.LostUpdates, r.LostAnswers and r.Verdict
// from the fields read back after the run (Initial, Remaining, Sold, Num)
// and the answers counted (OK, Codes), as ladder.md "The verdicts" defines
// them. It is pure and idempotent.
//
// For /sale: oversold = ok - (initial - remaining), the sales answered 200
// beyond the stock that actually left the shelf. SAFE needs oversold == 0,
// remaining >= 0 and ok <= initial; anything else is OVERSOLD. A negative
// oversold (stock gone without a 200 reaching the client) is not SAFE
// either, the books do not balance, with one exception: when the sold
// counter holds exactly the stock that left (no item counted twice) and
// the missing 200s are no more than the requests the app never answered
// (a 502 or 504 from the load balancer, a transport error), they are sales
// whose answer was lost, with an instance that crashed after selling, say.
// That is SAFE, and LostAnswers counts them.
//
// For /testLock: lost updates = ok - num, increments answered 200 that the
// counter does not hold. SAFE needs 0, else LOST UPDATES; again, a counter
// ahead of the 200s by no more than the unanswered requests is SAFE with
// LostAnswers (a lock that fails loses increments, it never adds any).
//
// A run whose counters balance but that stalled longer than its bound
// (StallBoundMs > 0 and StallMs > StallBoundMs) is DEADLOCK: after a fault
// nothing got through the lock any more. Safety is judged first: a run that
// both oversold and stalled is OVERSOLD.
//
// Any other endpoint leaves the counts at 0 and the verdict empty.
func Judge(r *Row) {
	if r == nil {
		return
	}
	r.Oversold, r.LostUpdates, r.LostAnswers, r.Verdict = 0, 0, 0, ""
	ok := int64(r.OK)
	lost := unanswered(r.Codes)
	switch strings.TrimPrefix(r.Endpoint, "/") {
	case EndpointSale:
		left := r.Initial - r.Remaining
		r.Oversold = ok - left
		switch {
		case r.Remaining < 0 || ok > r.Initial:
			r.Verdict = VerdictOversold
		case r.Oversold == 0:
			r.Verdict = VerdictSafe
		case r.Oversold < 0 && r.Sold == left && -r.Oversold <= lost:
			r.Verdict, r.LostAnswers = VerdictSafe, -r.Oversold
		default:
			r.Verdict = VerdictOversold
		}
	case EndpointTestLock:
		r.LostUpdates = ok - r.Num
		switch {
		case r.LostUpdates == 0:
			r.Verdict = VerdictSafe
		case r.LostUpdates < 0 && -r.LostUpdates <= lost:
			r.Verdict, r.LostAnswers = VerdictSafe, -r.LostUpdates
		default:
			r.Verdict = VerdictLostUpdates
		}
	}
	if r.Verdict == VerdictSafe && r.StallBoundMs > 0 && r.StallMs > r.StallBoundMs {
		r.Verdict = VerdictDeadlock
	}
}

// unanswered counts the requests the app itself never answered: a 502 or
// 504 from the load balancer (the instance died or hung), or a transport
// error. Any of them may have sold before its answer was lost.
func unanswered(codes map[string]int) int64 {
	return int64(codes["502"] + codes["504"] + codes["error"])
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
