package history

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is the object a history worked on.
type Kind int

const (
	// Sale: a stock that each applied sale lowers by one and never below
	// zero; a sale finding it at zero answers sold out.
	Sale Kind = iota
	// Increment: the counter num, raised by one by each applied request.
	Increment
)

// Linearizable is a check's finding.
type Linearizable string

const (
	Ok      Linearizable = "ok"      // some order of the operations explains every answer
	Illegal Linearizable = "illegal" // none does
	// NotKnown: the checker ran out of time (or had nothing to check).
	NotKnown Linearizable = "unknown"
)

// Result is what Check found.
type Result struct {
	Linearizable Linearizable
	// Evidence says why a history is illegal, in one line.
	Evidence string
	// Ops counts the operations checked: every request but the Rejected,
	// which changed nothing for sure.
	Ops int

	// The checked history and porcupine's account of it, for Visualize:
	// for an illegal history, the shortest prefix that is already illegal.
	model   porcupine.Model
	info    porcupine.LinearizationInfo
	hasInfo bool
}

// span is the model's state: the values the object may hold, lo..hi. It is
// one value until a request of Unknown outcome, which may or may not have
// been applied, widens it by one; an answer that names the value narrows it
// back. (A set of states would do the same; a span keeps each step O(1)
// however many answers were lost.)
type span struct{ lo, hi int64 }

func (s span) String() string {
	if s.lo == s.hi {
		return fmt.Sprint(s.lo)
	}
	return fmt.Sprintf("%d..%d", s.lo, s.hi)
}

func (s span) has(v int64) bool { return s.lo <= v && v <= s.hi }

func model(kind Kind, initial int64) porcupine.Model {
	noun := "stock"
	if kind == Increment {
		noun = "num"
	}
	return porcupine.Model{
		Init: func() any { return span{initial, initial} },
		Step: func(state, _, output any) (bool, any) {
			s, op := state.(span), output.(Op)
			if kind == Increment {
				switch op.Outcome {
				case Applied:
					return s.has(op.Value - 1), span{op.Value, op.Value}
				case Unknown:
					return true, span{s.lo, s.hi + 1}
				case Read:
					return s.has(op.Value), span{op.Value, op.Value}
				}
				return false, s // an increment never answers sold out
			}
			switch op.Outcome {
			case Applied:
				return op.Value >= 0 && s.has(op.Value+1), span{op.Value, op.Value}
			case SoldOut:
				return s.has(0), span{0, 0}
			case Unknown:
				return true, span{max(s.lo-1, 0), s.hi}
			case Read:
				return s.has(op.Value), span{op.Value, op.Value}
			}
			return false, s
		},
		DescribeOperation: func(_, output any) string {
			op := output.(Op)
			verb := "sell"
			if kind == Increment {
				verb = "incr"
			}
			switch op.Outcome {
			case Applied:
				if kind == Increment {
					return fmt.Sprintf("%s → num %d", verb, op.Value)
				}
				return fmt.Sprintf("%s → %d left", verb, op.Value)
			case SoldOut:
				return verb + " → sold out"
			case Read:
				return fmt.Sprintf("read back → %s %d", noun, op.Value)
			}
			return fmt.Sprintf("%s → ? (%d, no answer)", verb, op.Code)
		},
		DescribeState: func(state any) string { return noun + " " + state.(span).String() },
		DescribeOperationMetadata: func(info any) string {
			op := info.(Op)
			return fmt.Sprintf("instance %s, HTTP %d", op.Instance, op.Code)
		},
	}
}

// visualizeBudget bounds the search run only to draw a history already
// proved illegal.
const visualizeBudget = 2 * time.Second

// Check judges a history of one object that started at initial, against
// the model of kind, within timeout (0: no bound).
//
// Two applied answers naming the same value prove a history illegal at once:
// the stock only goes down and num only up, one step per applied request, so
// no order can make two of them leave the same value. That is the lost
// update a broken lock causes, and it is found without a search; porcupine
// then checks the history up to that point, for the visualisation. Without
// such a pair porcupine checks the whole history.
func Check(kind Kind, initial int64, ops []Op, timeout time.Duration) Result {
	m := model(kind, initial)
	hist := operations(ops, -1)
	res := Result{Ops: len(hist), model: m}
	if len(hist) == 0 {
		res.Linearizable = NotKnown
		return res
	}
	if ev, until, ok := duplicate(kind, initial, ops); ok {
		res.Linearizable, res.Evidence = Illegal, ev
		// The proof is in hand; the search is only for the picture, and
		// with many buyers in flight it can be long: its partial orders
		// are drawn as far as it got.
		budget := visualizeBudget
		if timeout > 0 {
			budget = min(timeout, budget)
		}
		_, res.info = porcupine.CheckOperationsVerbose(m, operations(ops, until), budget)
		res.hasInfo = true
		return res
	}
	switch porcupine.CheckOperationsTimeout(m, hist, timeout) {
	case porcupine.Ok:
		res.Linearizable = Ok
	case porcupine.Illegal:
		res.Linearizable = Illegal
		res.Evidence = "no order of the operations explains every answer"
		_, res.info = porcupine.CheckOperationsVerbose(m, hist, timeout)
		res.hasInfo = true
	default:
		res.Linearizable = NotKnown
		res.Evidence = fmt.Sprintf("the checker gave up after %s", timeout)
	}
	return res
}

// HasVisualization reports whether Visualize has something to draw.
func (r Result) HasVisualization() bool { return r.hasInfo }

// Visualize writes porcupine's HTML view of an illegal history: every
// operation on a time line per client, and the longest orders that explain
// a prefix of it.
func (r Result) Visualize(w io.Writer) error {
	if !r.hasInfo {
		return fmt.Errorf("history: nothing to visualise (%s)", r.Linearizable)
	}
	return porcupine.Visualize(r.model, r.info, w)
}

// operations turns ops into porcupine's, leaving out the Rejected and, when
// until >= 0, the ops called after until. An Unknown op gets a return after
// every other: it may take effect at any time after its call.
func operations(ops []Op, until int64) []porcupine.Operation {
	var end int64 // after every call and every known return
	for _, op := range ops {
		if until < 0 || op.Call <= until {
			end = max(end, op.Call, op.Return)
		}
	}
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Outcome == Rejected || (until >= 0 && op.Call > until) {
			continue
		}
		ret := op.Return
		if op.Outcome == Unknown {
			ret = end + 1
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client, Call: op.Call, Return: ret,
			Input: nil, Output: op, Metadata: op,
		})
	}
	return out
}

// duplicate finds the first pair of applied answers that name the same
// value (or a value the object could never hold), by the return of the
// later one: the history up to then is already illegal.
func duplicate(kind Kind, initial int64, ops []Op) (evidence string, until int64, ok bool) {
	applied := make([]Op, 0, len(ops))
	for _, op := range ops {
		if op.Outcome == Applied {
			applied = append(applied, op)
		}
	}
	slices.SortStableFunc(applied, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	seen := make(map[int64]Op, len(applied))
	for _, op := range applied {
		if (kind == Sale && (op.Value < 0 || op.Value >= initial)) || (kind == Increment && op.Value <= initial) {
			return fmt.Sprintf("an answer names %d, a value the object could not reach from %d", op.Value, initial), op.Return, true
		}
		if first, dup := seen[op.Value]; dup {
			what := fmt.Sprintf("two sales both left %d", op.Value)
			if kind == Increment {
				what = fmt.Sprintf("two increments both made num %d", op.Value)
			}
			return fmt.Sprintf("%s (answered by %s at %s and by %s at %s)", what,
				first.Instance, time.Duration(first.Return), op.Instance, time.Duration(op.Return)), op.Return, true
		}
		seen[op.Value] = op
	}
	return "", 0, false
}
