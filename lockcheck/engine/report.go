package engine

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// The verdicts, as the matrix names them.
const (
	Oversold = "OVERSOLD"
	Deadlock = "DEADLOCK"
	None     = "none"
	// Violated: the business's Judge found its keys wrong (not the sale).
	Violated = "VIOLATED"
	// Leaked: as DEADLOCK, but no client died: a cancelled Obtain or
	// Release (Cancel, cancel.go), or an Obtain that gave up on a lost
	// reply (Lost), left the key.
	Leaked = "LEAKED"
)

// verdictOf is the verdict of what a Judge found wrong.
func verdictOf(err error) string {
	var o *Oversell
	if errors.As(err, &o) {
		return Oversold
	}
	return Violated
}

// setBroken records what the Judge found wrong at the end of the trace.
func (r *Result) setBroken(err error) {
	if err == nil {
		return
	}
	r.Violation = err.Error()
	var o *Oversell
	if errors.As(err, &o) {
		r.Oversold = o.N
	}
}

// Result is what a search found, and what it covered.
type Result struct {
	Target  string
	Masters int    // a rung on masters: how many; 0, one server
	Verdict string // Oversold, Violated, Deadlock, Leaked or None
	// Steps is the counterexample's length: its schedule's steps (a
	// DEADLOCK's probe, the live clients trying forever, not counted).
	Steps    int
	Schedule []Choice
	Trace    []Step
	Clients  int // the clients of the last search (of the counterexample's)
	Faults   Faults
	Config   Config
	// Schedules counts the schedules run (every one from the start);
	// States, the distinct states reached.
	Schedules, States int
	// Depth is the deepest level searched to the end; Bound says why the
	// search stopped there: "exhausted" (no new state below it), "depth"
	// (the bound) or "time" (the budget).
	Depth    int
	Bound    string
	Elapsed  time.Duration
	Covers   []Cover // what each search (2 clients, 3...) covered
	Diverged int     // replays that went another way (should be 0)
	Replay   string  // "reproduced", "not-reproduced" or "-"
	Oversold int64   // sales the stock does not show, at the end of the trace
	// Violation is what the business's Judge found wrong at the end of
	// the trace.
	Violation string
	// Asleep says, for the counterexample's start and each of its steps,
	// which clients were asleep after it (bit i: client i; a search in a
	// bubble): a replay on real time does not wait for them.
	Asleep []uint8
	// Columns names the business's keys, as the diagram's last column
	// does ("stock/sold").
	Columns string
	// Taken counts the steps the search took, by kind: which faults it
	// reached, and how often.
	Taken map[ChoiceKind]int
	// Unexplored is what of the rung the search does not run (Target's).
	Unexplored string
	// InLine: A and B were one process (Target's); Passed counts the
	// schedules in which one passed the lock to the other in memory.
	InLine bool
	Passed int
}

// Line is the one-line summary: NAME  VERDICT  steps=N  schedules=M  replay=R.
func (r Result) Line() string {
	replay := r.Replay
	if replay == "" {
		replay = "-"
	}
	return fmt.Sprintf("%-12s %-9s steps=%d  schedules=%d  replay=%s", r.Target, r.Verdict, r.Steps, r.Schedules, replay)
}

// Cover is what the search with one number of clients covered.
type Cover struct {
	Clients int
	// Depth: every schedule of up to Depth steps was tried (up to
	// pruning, a state reached before is not explored again); Bound says
	// why not deeper: "exhausted" (no new state), "depth" (the bound) or
	// "time" (the budget).
	Depth  int
	Bound  string
	States int
}

// Covered says what the searches covered.
func (r Result) Covered() string {
	c := r.Config
	var parts []string
	for _, cv := range r.Covers {
		what := fmt.Sprintf("every schedule to depth %d", cv.Depth)
		if cv.Bound == "exhausted" {
			what = fmt.Sprintf("every state (none new past depth %d)", cv.Depth)
		}
		parts = append(parts, fmt.Sprintf("%d clients: %s, %d states", cv.Clients, what, cv.States))
	}
	line := ""
	if r.InLine {
		line = fmt.Sprintf("; A and B requests of one process (the lock passed in memory in %d schedules)", r.Passed)
		if n := len(r.Covers); n > 0 && r.Covers[n-1].Clients > 2 {
			line += ", C a process of its own"
		}
	}
	s := fmt.Sprintf("%s%s; %d section each; faults %s (at most %d per schedule, time passing at most %d times); %d schedules in %.1fs",
		strings.Join(parts, "; "), line, c.Sections, r.Faults, c.MaxFaults, c.MaxTicks, r.Schedules, r.Elapsed.Seconds())
	if r.Unexplored != "" {
		s += "; not explored: " + r.Unexplored
	}
	return s
}

// Write prints the result: the counterexample as a sequence diagram (a
// column per client and Redis's answer, with the lock key and the stock
// after each step), or what was covered.
func (r Result) Write(out io.Writer) {
	fmt.Fprintf(out, "%s: ", r.Target)
	if r.Verdict == None {
		fmt.Fprintf(out, "no violation found\n  covered: %s\n", r.Covered())
		return
	}
	fmt.Fprintf(out, "%s in %d steps, %d clients (faults %s; %d schedules, %d states, %.1fs)\n",
		r.Verdict, r.Steps, r.Clients, r.Faults, r.Schedules, r.States, r.Elapsed.Seconds())
	writeDiagram(out, r.Trace, r.Clients, r.Columns)
	switch r.Verdict {
	case Oversold, Violated:
		fmt.Fprintf(out, "  %s: %s\n", r.Verdict, r.Violation)
	case Deadlock, Leaked:
		fmt.Fprintf(out, "  %s: from * on, the live clients try for ever (time run on by %s, three times over) and never get a lock that no live client holds\n", r.Verdict, 2*r.Config.TTL)
		if r.Verdict == Leaked {
			fmt.Fprintf(out, "  %s\n", r.Violation)
		}
	}
}

func writeDiagram(out io.Writer, trace []Step, n int, values string) {
	head := []string{"#", "t(ms)"}
	for i := range n {
		head = append(head, string(rune('A'+i)))
	}
	head = append(head, "Redis", "lock after", cmp.Or(values, "stock/sold"))
	rows := [][]string{head}
	last := -1
	for _, s := range trace {
		num := fmt.Sprint(s.N)
		switch {
		case s.N == 0:
			num = "*"
		case s.N == last:
			num = ""
		}
		last = s.N
		row := []string{num, fmt.Sprint(s.At.Milliseconds())}
		for i := range n {
			cell := ""
			if s.Client == i {
				cell = s.Event
				if s.Note != "" {
					cell += "  [" + s.Note + "]"
				}
			}
			row = append(row, cell)
		}
		reply := s.Reply
		if s.Client < 0 {
			reply = "-- " + s.Note + " --"
		} else if reply != "" {
			reply = "-> " + reply
		}
		row = append(row, reply, s.Lock, s.Stock)
		rows = append(rows, row)
	}
	widths := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for j, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range row {
			pad := widths[i] - utf8.RuneCountInString(c)
			if i < 2 {
				b.WriteString(strings.Repeat(" ", pad) + c)
			} else {
				b.WriteString(c + strings.Repeat(" ", pad))
			}
			b.WriteString(" | ")
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " |"))
		if j == 0 {
			var sep []string
			for _, w := range widths {
				sep = append(sep, strings.Repeat("-", w))
			}
			fmt.Fprintln(out, "  "+strings.Join(sep, "-+-"))
		}
	}
}
