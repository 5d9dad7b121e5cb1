package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// downFor is a hook that takes the app's "server" down (every request
// waits for the lock, then 503) and, as its recovery, waits for longer
// than the stall bound before it brings it back (unless back is false),
// as a server restarted on a loaded machine takes its time.
func downFor(f *stuckApp, recovery time.Duration, back bool) runHook {
	return runHook{
		at:    50,
		about: "stop the server",
		do: func(context.Context) error {
			f.mu.Lock()
			f.stuck = true
			f.mu.Unlock()
			return nil
		},
		then: func(ctx context.Context) error {
			select {
			case <-time.After(recovery):
			case <-ctx.Done():
			}
			f.mu.Lock()
			f.stuck = !back
			f.mu.Unlock()
			return nil
		},
	}
}

// A server that takes longer than the stall bound to come back is not a
// DEADLOCK: the stall is measured from its recovery, and the rung that
// serves again at once is SAFE with a short stall.
func TestStallCountsFromTheRecovery(t *testing.T) {
	const bound = 300 * time.Millisecond
	f := &stuckApp{wait: 50 * time.Millisecond}
	ld := &load{scenario: "backend-restart", stallBound: bound, hooks: []runHook{downFor(f, 4*bound, true)}}
	r := runStuck(t, f, ld, 600)
	if r.Verdict != VerdictSafe || r.Stopped || r.Requests != 600 {
		t.Fatalf("verdict %s, stopped %v (%s), requests %d: want SAFE, all 600", r.Verdict, r.Stopped, r.StopReason, r.Requests)
	}
	if r.Codes["503"] == 0 {
		t.Errorf("no 503 while the server was down (codes %v): the fault did not strike", r.Codes)
	}
	if r.StallMs >= float64(bound.Milliseconds()) {
		t.Errorf("stall %.1fms, want under the %v bound: measured from the recovery", r.StallMs, bound)
	}
}

// A rung that does not serve again once its server is back is DEADLOCK,
// and the reason says the stall ran from the recovery.
func TestStallAfterTheRecoveryIsADeadlock(t *testing.T) {
	const bound = 300 * time.Millisecond
	f := &stuckApp{wait: 50 * time.Millisecond}
	ld := &load{scenario: "backend-restart", stallBound: bound, hooks: []runHook{downFor(f, 2*bound, false)}}
	r := runStuck(t, f, ld, 100000)
	if r.Verdict != VerdictDeadlock || !r.Stopped {
		t.Fatalf("verdict %s, stopped %v (codes %v); want DEADLOCK, stopped", r.Verdict, r.Stopped, r.Codes)
	}
	if !strings.Contains(r.StopReason, "recovery") || r.StallMs <= float64(bound.Milliseconds()) {
		t.Errorf("stall %.1fms, reason %q: want past the bound, counted from the recovery", r.StallMs, r.StopReason)
	}
}
