package explore_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
)

// bySteps bounds the Redlock searches by their depth, not by time: each
// counterexample is 9 steps deep with 2 clients, and the search exhausts
// every schedule to that depth however slow the machine is. With a 20s
// budget, on two cores under -race beside CPU hogs, it reached depth 8
// only and found nothing. The budget is only a guard against a hang.
var bySteps = explore.Config{MaxClients: 2, Depth: 9, Budget: hangGuard}

// hangGuard is the budget of every search these tests run: each ends by
// a bound of its own (a verdict found, its depth, every state seen), the
// same schedules every run; a budget of seconds covered less on a loaded
// machine (TestFencedSafe, TestCohortSafe and TestAtomicSafe then failed
// as "covered too little"). Reaching it means a hang.
const hangGuard = 10 * time.Minute

// TestRedlockPause finds Redlock's flaw (docs/ladder.md, rung 10): a
// holder paused past its validity still writes, beside the client that
// took the lock from a majority of the masters meanwhile; and the schedule
// oversells on a real redis-server too. On three masters, the rung's own
// code with a quorum of two: five take longer (make explore runs them).
func TestRedlockPause(t *testing.T) {
	tg := lookup(t, "redlock")
	tg.Masters = 3
	r := run(t, tg, bySteps)
	// A takes two masters and reads the stock, pauses, B takes two
	// masters and reads, both write.
	if r.Verdict != explore.Oversold || r.Steps != 9 || r.Clients != 2 {
		t.Fatalf("redlock: %s in %d steps, %d clients (%s); want %s in 9 steps, 2 clients",
			r.Verdict, r.Steps, r.Clients, r.Covered(), explore.Oversold)
	}
	paused := false
	for _, s := range r.Trace {
		paused = paused || strings.Contains(s.Event, "pauses")
	}
	if !paused {
		t.Errorf("redlock: the counterexample has no pause: %+v", r.Trace)
	}

	wantReproduced(t, tg, r)
}

// TestRedlockRestart finds Redlock's other flaw: a master that restarts
// without persistence forgets the lock it granted, and with it A's
// majority is gone while A holds: B takes the lock from the others.
func TestRedlockRestart(t *testing.T) {
	tg := lookup(t, "redlock")
	tg.Masters = 3
	cfg := bySteps
	cfg.Faults = explore.Restart
	r := run(t, tg, cfg)
	if r.Verdict != explore.Oversold || r.Clients != 2 {
		t.Fatalf("redlock: %s in %d steps, %d clients (%s); want %s with 2 clients",
			r.Verdict, r.Steps, r.Clients, r.Covered(), explore.Oversold)
	}
	restarted := false
	for _, s := range r.Trace {
		restarted = restarted || strings.Contains(s.Note, "restarts empty")
	}
	if !restarted {
		t.Errorf("redlock: the counterexample has no restart: %+v", r.Trace)
	}
	wantReproduced(t, tg, r)
}

// wantReproduced replays r's counterexample on a real redis-server, when
// there is one, and wants the violation there too.
func wantReproduced(t *testing.T, tg explore.Target, r explore.Result) {
	t.Helper()
	if p := replayer(t); p != nil {
		if got := p.Replay(context.Background(), tg, r); got != "reproduced" {
			t.Errorf("%s: %d steps replayed on redis-server: %s", tg.Name, r.Steps, got)
		}
	}
}

// replayer starts a redis-server for replays, or says why not (nil).
func replayer(t *testing.T) *explore.Replayer {
	t.Helper()
	var out strings.Builder
	p, stop, err := explore.StartReplayer(context.Background(), &out, os.Getenv("CI") == "true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if p == nil {
		t.Log(strings.TrimSpace(out.String()))
	}
	return p
}

// TestRedsyncRedlockPause explores redsync's own Redlock (the rung
// redsync-redlock, the library's code unchanged) on three masters, as
// the page does: a holder paused past its lease writes beside the
// client that took every master meanwhile (redsync waits for each
// master's answer, so both rounds ask all three); the schedule oversells
// on a real redis-server too.
func TestRedsyncRedlockPause(t *testing.T) {
	tg := lookup(t, "redsync-redlock")
	tg.Masters = 3
	cfg := bySteps
	cfg.Depth = 11
	r := run(t, tg, cfg)
	if r.Verdict != explore.Oversold || r.Steps != 11 || r.Clients != 2 {
		t.Fatalf("redsync-redlock: %s in %d steps, %d clients (%s); want %s in 11 steps, 2 clients",
			r.Verdict, r.Steps, r.Clients, r.Covered(), explore.Oversold)
	}
	paused := false
	for _, s := range r.Trace {
		paused = paused || strings.Contains(s.Event, "pauses")
	}
	if !paused {
		t.Errorf("redsync-redlock: the counterexample has no pause: %+v", r.Trace)
	}
	wantReproduced(t, tg, r)
}
