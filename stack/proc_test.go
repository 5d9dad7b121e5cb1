package stack

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// sleeper starts sleep 30 as the stack starts its servers, and kills it
// at the end of the test whatever stop did.
func sleeper(t *testing.T) *proc {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep: %v", err)
	}
	p, err := startProc("sleep", bin, []string{"30"}, nil, t.TempDir(), filepath.Join(t.TempDir(), "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	if p.start == 0 || p.start != ProcStart(p.Pid()) {
		t.Fatalf("start time %d recorded, /proc says %d", p.start, ProcStart(p.Pid()))
	}
	return p
}

// stop signals a process only while its pid still names it: a start time
// other than the one recorded at start means the pid is another
// process's now, which neither the signals nor the group's sweep touch.
func TestStopNeverSignalsAReusedPid(t *testing.T) {
	// Its pid names another process now: stop refuses to signal it.
	p := sleeper(t)
	p.start++
	if err := p.Stop(50 * time.Millisecond); !errors.Is(err, errPidReused) {
		t.Fatalf("stop of a pid with another start time: %v, want errPidReused", err)
	}
	// Refused at its first signal: no clock says how soon (the bound of
	// a second that stood here is a loaded machine's luck, not the rule).
	if !ProcAlive(p.Pid(), p.start-1) {
		t.Fatal("stop signalled a pid whose start time differs from the one recorded")
	}
	// The one it recorded: stopped.
	p.start--
	if err := p.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if ProcAlive(p.Pid(), p.start) || groupAlive(p.Pid()) {
		t.Fatal("stop left the process or its group alive")
	}

	// A leader reaped, its pid given to another process that leads a
	// group of its own: the sweep leaves that group alone. (The other
	// process stands in for it: a reaped proc recorded at another time.)
	other := sleeper(t)
	reaped := &proc{name: "reaped", cmd: other.cmd, start: other.start + 1, done: make(chan struct{})}
	close(reaped.done)
	if err := reaped.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if !ProcAlive(other.Pid(), other.start) || !groupAlive(other.Pid()) {
		t.Fatal("the sweep of a reaped leader's group killed the group of the process that got its pid")
	}
}
