package lockcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockladder/lockladder/lockcheck/engine"
)

// Result is what a check found, and what it covered.
type Result struct {
	Lock string
	// Verdict is OVERSOLD (the sale broken), VIOLATED (a Section's
	// Invariant said so), DEADLOCK (a client died holding a lock no live
	// client can ever take again), LEAKED (as DEADLOCK, but a cancelled
	// Obtain or Release left the key: Cancel), or "none".
	Verdict string
	// Faults are those of the search that found it ("crash,late").
	Faults string
	// Steps and Clients are the counterexample's.
	Steps, Clients int
	// Diagram is the counterexample drawn: a row per step, a column per
	// client, Redis's answers, the lock and the keys after each step.
	Diagram string
	// Violation says what was wrong at its end.
	Violation string
	// Token replays it, anywhere (Replay).
	Token string
	// Replay is what the schedule did on a real redis-server:
	// "reproduced", "not-reproduced" (the check then fails with both), or
	// why it was not replayed.
	Replay string
	// Also are what the later stages of the default search found (the
	// lease that lapses, after the lock's own bug).
	Also []Result
	// Coverage says what was searched, in words.
	Coverage string
	// Schedules and States count what was run; Elapsed, the wall time.
	Schedules, States int
	Elapsed           time.Duration
	// CutShort: a search stopped at the budget before its depth.
	CutShort bool

	found engine.Result // the engine's, for the replay
}

// Check checks l (Explore) and fails t with the shortest schedule that
// breaks it, drawn, replayed on redis-server and printed as a token; or
// with what kept the check from a verdict (a failure of the lock's code,
// a budget that ran out unless cfg.TimeBox); or logs what it covered.
// It returns the Result for further assertions. Checks may run in
// parallel tests, each with a Redis of its own.
func Check(t *testing.T, l Lock, cfg Config) Result {
	t.Helper()
	return check(t, t, l, cfg)
}

// reporter is what a check says its verdict to (t).
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

func check(t *testing.T, rep reporter, l Lock, cfg Config) Result {
	t.Helper()
	r, err := Explore(t, l, cfg)
	rep.Helper()
	switch {
	case err != nil:
		rep.Errorf("%v", err)
	case r.Verdict != engine.None:
		rep.Errorf("%s", r)
	case r.CutShort && !cfg.TimeBox:
		rep.Errorf("lockcheck: %s: the budget (%s) ran out before the search reached its depth: no verdict. Covered: %s\n"+
			"Raise Config.Budget, lower Depth or Clients, or set TimeBox to accept a search cut short.", r.Lock, cfg.withDefaults().Budget, r.Coverage)
	default:
		rep.Logf("%s", r)
	}
	return r
}

// Explore checks l as Check does, without failing t: the Result, or an
// error that says what kept the check from a verdict (the replay on
// redis-server disagreeing is one).
func Explore(t *testing.T, l Lock, cfg Config) (Result, error) {
	t.Helper()
	cfg = cfg.withDefaults()
	stages, err := cfg.Faults.stages()
	if err != nil {
		return Result{}, err
	}
	targets := make([]engine.Target, len(stages))
	for i, f := range stages {
		if targets[i], err = l.target(f); err != nil {
			return Result{}, err
		}
	}
	wall := engine.StartWallClock(targets[0].Name)
	defer wall.Close()
	var found []engine.Result
	synctest.Test(t, func(bt *testing.T) {
		deadline := wall.Now().Add(cfg.Budget)
		for i, f := range stages {
			share := deadline.Sub(wall.Now()) / time.Duration(len(stages)-i)
			ex := engine.NewInBubble(targets[i], cfg.engine(f, max(share, time.Millisecond)), wall)
			var r engine.Result
			if r, err = ex.Search(bt.Context()); err != nil {
				return
			}
			found = append(found, r)
		}
	})
	if err != nil {
		return Result{}, err
	}
	r := result(targets[0].Name, found)
	if r.Verdict != engine.None && !cfg.NoReplay {
		err = replay(t.Context(), &r, func(i int) engine.Target { return targets[i] }, stages)
	}
	return r, err
}

// result is the stages' findings as one Result: the first violation,
// the later ones as Also; or none, with what every stage covered.
func result(name string, found []engine.Result) Result {
	out := Result{Lock: name, Verdict: engine.None}
	var covered []string
	for _, f := range found {
		out.Schedules += f.Schedules
		out.States += f.States
		out.Elapsed += f.Elapsed
		for _, c := range f.Covers {
			out.CutShort = out.CutShort || c.Bound == "time" && f.Verdict == engine.None
		}
		covered = append(covered, coverage(f))
		if f.Verdict == engine.None {
			continue
		}
		one := finding(name, f)
		if out.Verdict == engine.None {
			schedules, states, elapsed := out.Schedules, out.States, out.Elapsed
			out, out.Schedules, out.States, out.Elapsed = one, schedules, states, elapsed
			continue
		}
		out.Also = append(out.Also, one)
	}
	out.Coverage = strings.Join(covered, "\n")
	return out
}

// finding is one violation found.
func finding(name string, f engine.Result) Result {
	return Result{Lock: name, Verdict: f.Verdict, Faults: faultNames(f.Faults), Steps: f.Steps, Clients: f.Clients,
		Diagram: f.Diagram(), Violation: f.Violation, Token: f.Token(), Coverage: coverage(f),
		Schedules: f.Schedules, States: f.States, Elapsed: f.Elapsed, found: f}
}

// coverage is what one search covered, in words: clients, depth,
// states, schedules, which faults it took and which it never could.
func coverage(f engine.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "faults %s: %s", faultNames(f.Faults), f.Covered())
	var took, never []string
	for _, k := range []struct {
		kind engine.ChoiceKind
		on   engine.Faults
		what string
	}{
		{engine.CrashIt, engine.Crash, "a crash"}, {engine.PauseIt, engine.Pause, "a pause"},
		{engine.SkewIt, engine.Skew, "a clock ahead"}, {engine.LoseIt, engine.Lost, "a lost reply"},
		{engine.CancelIt, engine.Cancel, "a context cancelled before a command"}, {engine.CancelAfterIt, engine.Cancel, "a context cancelled after a command ran"},
		{engine.Tick, engine.Slow | engine.Late | engine.Idle, "time passing"},
		{engine.DeliverWD, ^engine.Faults(0), "a watchdog's renewal"},
	} {
		switch n := f.Taken[k.kind]; {
		case n > 0:
			took = append(took, fmt.Sprintf("%s in %d", k.what, n))
		case f.Faults&k.on != 0 && k.kind != engine.DeliverWD:
			never = append(never, k.what)
		}
	}
	if len(took) > 0 {
		fmt.Fprintf(&b, "; steps taken: %s", strings.Join(took, ", "))
	}
	if len(never) > 0 {
		fmt.Fprintf(&b, "; never possible: %s", strings.Join(never, ", "))
	}
	return b.String()
}

// String is the report: the counterexample, its replay and token, and
// what else was found; or what was covered.
func (r Result) String() string {
	var b strings.Builder
	if r.Verdict == engine.None {
		fmt.Fprintf(&b, "lockcheck: %s: no violation found (%d schedules, %d states, %.1fs)\n  covered: %s",
			r.Lock, r.Schedules, r.States, r.Elapsed.Seconds(), strings.ReplaceAll(r.Coverage, "\n", "\n  covered: "))
		if r.CutShort {
			b.WriteString("\n  the search was cut short by its budget (TimeBox)")
		}
		return b.String()
	}
	writeFinding(&b, r)
	for _, a := range r.Also {
		b.WriteString("\nalso, ")
		writeFinding(&b, a)
	}
	return b.String()
}

func writeFinding(b *strings.Builder, r Result) {
	fmt.Fprintf(b, "lockcheck: %s: %s in %d steps, %d clients (faults %s; %d schedules, %d states, %.1fs)\n%s  %s: %s\n",
		r.Lock, r.Verdict, r.Steps, r.Clients, r.Faults, r.Schedules, r.States, r.Elapsed.Seconds(), r.Diagram, r.Verdict, r.Violation)
	if r.Verdict == engine.Deadlock || r.Verdict == engine.Leaked {
		fmt.Fprintf(b, "  (from * on, the live clients try for ever, time run far past every lease, and never get a lock no live client holds)\n")
	}
	fmt.Fprintf(b, "  on a real redis-server: %s\n  replay token: %s (lockcheck.Replay(t, lock, token))\n", r.Replay, r.Token)
}

// replay replays each finding of r on a redis-server of its own: a
// disagreement is an error with both results.
func replay(ctx context.Context, r *Result, target func(int) engine.Target, stages []engine.Faults) error {
	srv, err := engine.StartRedisServer(ctx)
	if err == nil {
		// Whole seconds: a lock that sets its lease by EXPIRE (seconds)
		// keeps it; the check's sleeps keep their proportion to it.
		srv.Replayer.TTL = time.Second
	}
	if errors.Is(err, engine.ErrNoRedisServer) {
		r.Replay = "not replayed: " + err.Error()
		for i := range r.Also {
			r.Also[i].Replay = r.Replay
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("lockcheck: %s: start redis-server for the replay: %w", r.Lock, err)
	}
	defer srv.Stop()
	var errs []error
	one := func(f *Result) {
		i := 0
		for j, s := range stages {
			if s == f.found.Faults {
				i = j
			}
		}
		f.Replay = srv.Replayer.Replay(ctx, target(i), f.found)
		if f.Replay != "reproduced" {
			errs = append(errs, fmt.Errorf("lockcheck: %s: the check found %s in %d steps in-process, but the same schedule on a real redis-server was %s: "+
				"the lock does something the check does not drive the same way there (a clock or timer of its own, randomness in what it sends); both disagree, so neither is a verdict:\n%s",
				f.Lock, f.Verdict, f.Steps, f.Replay, f))
		}
	}
	one(r)
	for i := range r.Also {
		one(&r.Also[i])
	}
	return errors.Join(errs...)
}
