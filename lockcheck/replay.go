package lockcheck

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/lockladder/lockladder/lockcheck/engine"
)

// Replay runs the schedule a failing check printed as token (its
// clients, faults, lease and steps) on l once, in-process and then on a
// real redis-server when one is installed, on any machine: it fails t
// while the schedule still breaks l, and logs that it no longer does
// once l is fixed. A token the lock cannot follow (a step not possible
// where it comes: another lock's, or l changed what it sends) fails t.
func Replay(t *testing.T, l Lock, token string) Result {
	t.Helper()
	r, err := replayToken(t, l, token)
	switch {
	case err != nil:
		t.Errorf("%v", err)
	case r.Verdict != engine.None:
		t.Errorf("%s", r)
	default:
		t.Logf("lockcheck: %s: the schedule of %s no longer breaks it (on a real redis-server: %s)", r.Lock, token, r.Replay)
	}
	return r
}

func replayToken(t *testing.T, l Lock, token string) (Result, error) {
	s, err := engine.ParseToken(token)
	if err != nil {
		return Result{}, fmt.Errorf("lockcheck: %w", err)
	}
	tg, err := l.target(s.Config.Faults)
	if err != nil {
		return Result{}, err
	}
	wall := engine.StartWallClock(tg.Name)
	defer wall.Close()
	var found engine.Result
	synctest.Test(t, func(*testing.T) {
		ex := engine.NewInBubble(tg, s.Config, wall)
		defer ex.Close()
		found, err = ex.Reproduce(s.Clients, s.Steps)
	})
	if err != nil {
		return Result{}, err
	}
	r := finding(tg.Name, found)
	r.Coverage = "the schedule of " + token
	if r.Verdict == engine.None {
		r.Token = token
		return r, nil
	}
	err = replay(t.Context(), &r, func(int) engine.Target { return tg }, []engine.Faults{s.Config.Faults})
	return r, err
}
