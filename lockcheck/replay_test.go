package lockcheck_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/lockcheck"
)

// TestATokenReplaysInAFreshProcess: the token a failing check prints
// replays the schedule in another process (this test binary, run again):
// Replay fails there with the same verdict, in-process and on
// redis-server; on the lock that fixes it, it passes.
func TestATokenReplaysInAFreshProcess(t *testing.T) {
	if tok := os.Getenv("LOCKCHECK_REPLAY_TOKEN"); tok != "" {
		lock := map[string]lockcheck.Lock{"lua": luaLock, "fenced": fencedLock}[os.Getenv("LOCKCHECK_REPLAY_LOCK")]
		lockcheck.Replay(t, lock, tok)
		return
	}
	r := &rec{}
	found := lockcheck.CheckWith(t, r, luaLock, lockcheck.Config{Faults: lockcheck.Faults{lockcheck.Slow}, Budget: hangGuard, NoReplay: true})
	if len(r.errs) != 1 || found.Token == "" || !strings.Contains(r.errs[0], "replay token: "+found.Token) {
		t.Fatalf("the failing check printed no token: %q", r.errs)
	}
	run := func(lock string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestATokenReplaysInAFreshProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "LOCKCHECK_REPLAY_TOKEN="+found.Token, "LOCKCHECK_REPLAY_LOCK="+lock)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("lua")
	if err == nil || !strings.Contains(out, "lua: OVERSOLD in 7 steps, 2 clients (faults slow") {
		t.Fatalf("the token replayed in a fresh process: %v\n%s", err, out)
	}
	if os.Getenv("CI") == "true" || !strings.Contains(out, "redis-server not found") {
		if !strings.Contains(out, "on a real redis-server: reproduced") {
			t.Errorf("the token's schedule on redis-server:\n%s", out)
		}
	}
	// A fencing token fixes it: the same schedule passes. (Its steps are
	// possible there too: a script takes the lease, two commands sell,
	// one releases.)
	out, err = run("fenced")
	if err != nil || !strings.Contains(out, "no longer breaks it") {
		t.Errorf("the token on the fixed lock: %v\n%s", err, out)
	}
}
