package history

import (
	"cmp"
	"fmt"
	"html"
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

// state is the model's state: the value the object held at the last step
// taken, and how many requests of Unknown outcome taken in since may still
// take effect, unseen. An Unknown request adds one to pending and changes
// nothing yet; the next answer that names a value spends as many of them
// as the step to that value needs (each taking effect just before it), and
// no more than are pending. Deciding late is the same as letting each such
// request take effect at any moment after its call, since they all change
// the object alike; deciding at once would make the checker try every one
// of them in every place, which a crash run makes hopeless.
//
// pending never exceeds the applications left to spend: the read-back at
// the end of a history says how far the object moved in all, and so how
// many Unknown requests took effect (see Check); with none, pending stays
// 0 and they are no-ops.
type state struct{ value, pending, spent int64 }

func (s state) String() string {
	if s.pending == 0 {
		return fmt.Sprint(s.value)
	}
	return fmt.Sprintf("%d (and up to %d unanswered)", s.value, s.pending)
}

// model is the object of kind, starting at initial, with at most unseen
// Unknown requests taking effect in all.
func model(kind Kind, initial, unseen int64) porcupine.Model {
	noun, step := "stock", int64(-1)
	if kind == Increment {
		noun, step = "num", 1
	}
	// reach is the step from s to v by j pending requests taking effect.
	reach := func(s state, v int64) (bool, state) {
		d := v - s.value
		if d%step != 0 || d/step < 0 || d/step > s.pending {
			return false, s
		}
		j := d / step
		return true, state{v, s.pending - j, s.spent + j}
	}
	return porcupine.Model{
		Init: func() any { return state{value: initial} },
		Step: func(st, _, output any) (bool, any) {
			s, op := st.(state), output.(Op)
			switch op.Outcome {
			case Unknown:
				if s.spent+s.pending < unseen {
					s.pending++
				}
				return true, s
			case Read:
				return reach(s, op.Value)
			case Applied:
				// The request itself took the last step to the value it
				// names; pending ones may have taken those before.
				if kind == Sale && op.Value < 0 {
					return false, s
				}
				ok, next := reach(s, op.Value-step)
				next.value = op.Value
				return ok, next
			case SoldOut:
				if kind == Increment {
					return false, s
				}
				return reach(s, 0)
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
		// porcupine's page shows the state and the metadata with
		// innerHTML (the description with textContent): they are HTML,
		// and the instance is whatever X-Instance said.
		DescribeState: func(st any) string { return html.EscapeString(noun + " " + st.(state).String()) },
		DescribeOperationMetadata: func(info any) string {
			op := info.(Op)
			return html.EscapeString(fmt.Sprintf("instance %s, HTTP %d", op.Instance, op.Code))
		},
	}
}

// visualizeBudget bounds the search run only to draw a history already
// proved illegal.
const visualizeBudget = 500 * time.Millisecond

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
	unseen, ev := unseenEffects(kind, initial, ops)
	m := model(kind, initial, max(unseen, 0))
	ops = earliestUnknown(ops, max(unseen, 0))
	hist := operations(ops, -1)
	res := Result{Ops: len(hist), model: m}
	if len(hist) == 0 {
		res.Linearizable = NotKnown
		return res
	}
	if ev != "" {
		res.Linearizable, res.Evidence = Illegal, ev
		res.info, res.hasInfo = visualize(m, hist, timeout), true
		return res
	}
	if ev, until, ok := duplicate(kind, initial, ops); ok {
		res.Linearizable, res.Evidence = Illegal, ev
		// The proof is in hand; the search is only for the picture, and
		// with many buyers in flight it can be long: its partial orders
		// are drawn as far as it got.
		res.info, res.hasInfo = visualize(m, operations(ops, until), timeout), true
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

// visualize runs porcupine only for its account of a history already
// proved illegal, within visualizeBudget: with many buyers in flight the
// search can be long, and its partial orders are drawn as far as it got.
func visualize(m porcupine.Model, hist []porcupine.Operation, timeout time.Duration) porcupine.LinearizationInfo {
	budget := visualizeBudget
	if timeout > 0 {
		budget = min(timeout, budget)
	}
	_, info := porcupine.CheckOperationsVerbose(m, hist, budget)
	return info
}

// unseenEffects is how many requests of Unknown outcome took effect, from
// how far the read-back says the object moved in all, less the answers
// that name a step; without a read-back, as many as there are. Each applied
// answer is one step and each Unknown request at most one, so a count
// outside 0..Unknowns proves the history illegal: evidence says how.
func unseenEffects(kind Kind, initial int64, ops []Op) (unseen int64, evidence string) {
	var applied, unknown int64
	read, final := false, int64(0)
	for _, op := range ops {
		switch op.Outcome {
		case Applied:
			applied++
		case Unknown:
			unknown++
		case Read:
			read, final = true, op.Value
		}
	}
	if !read {
		return unknown, ""
	}
	moved := final - initial
	if kind == Sale {
		moved = initial - final
	}
	unseen = moved - applied
	what, gone := "increments", fmt.Sprintf("num rose by %d", moved)
	if kind == Sale {
		what, gone = "sales", fmt.Sprintf("%d items gone", moved)
	}
	switch {
	case unseen < 0:
		return unseen, fmt.Sprintf("%d %s answered 200 but the read-back shows %s", applied, what, gone)
	case unseen > unknown:
		return unseen, fmt.Sprintf("%s for %d %s answered and %d without an answer: some took effect twice",
			gone, applied, what, unknown)
	}
	return unseen, ""
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

// earliestUnknown leaves out every Unknown op but the k called first. At
// most k of them took effect (the read-back says so), each at any time
// after its call, and alike: whatever order explains the answers with
// some k of them explains them with the k called first, which could take
// effect at least as early. The others change nothing, yet porcupine
// would try each in every place: a crash run's thousand unanswered
// requests took its whole time budget and decided nothing.
func earliestUnknown(ops []Op, k int64) []Op {
	var unknown []int // indices of the Unknown ops, by call
	for i, op := range ops {
		if op.Outcome == Unknown {
			unknown = append(unknown, i)
		}
	}
	if int64(len(unknown)) <= k {
		return ops
	}
	slices.SortStableFunc(unknown, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
	drop := make(map[int]bool, len(unknown)-int(k))
	for _, i := range unknown[k:] {
		drop[i] = true
	}
	out := make([]Op, 0, len(ops)-len(drop))
	for i, op := range ops {
		if !drop[i] {
			out = append(out, op)
		}
	}
	return out
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
