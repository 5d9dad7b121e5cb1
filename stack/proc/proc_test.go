package proc

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
func sleeper(t *testing.T) *Proc {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep: %v", err)
	}
	p, err := Start("sleep", bin, []string{"30"}, nil, t.TempDir(), filepath.Join(t.TempDir(), "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	if p.start == 0 || p.start != StartTime(p.Pid()) {
		t.Fatalf("start time %d recorded, /proc says %d", p.start, StartTime(p.Pid()))
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
	if err := p.Stop(50 * time.Millisecond); !errors.Is(err, ErrPidReused) {
		t.Fatalf("stop of a pid with another start time: %v, want ErrPidReused", err)
	}
	// Refused at its first signal: no clock says how soon (the bound of
	// a second that stood here is a loaded machine's luck, not the rule).
	if !Alive(p.Pid(), p.start-1) {
		t.Fatal("stop signalled a pid whose start time differs from the one recorded")
	}
	// The one it recorded: stopped.
	p.start--
	if err := p.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(p.Pid(), p.start) || GroupAlive(p.Pid()) {
		t.Fatal("stop left the process or its group alive")
	}

	// A leader reaped, its pid given to another process that leads a
	// group of its own: the sweep leaves that group alone. (The other
	// process stands in for it: a reaped proc recorded at another time.)
	other := sleeper(t)
	reaped := &Proc{name: "reaped", cmd: other.cmd, start: other.start + 1, done: make(chan struct{})}
	close(reaped.done)
	if err := reaped.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if !Alive(other.Pid(), other.start) || !GroupAlive(other.Pid()) {
		t.Fatal("the sweep of a reaped leader's group killed the group of the process that got its pid")
	}
}
