package proc

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A pid with its start time names one process: alive while it runs, not
// once it is a zombie, never a process started at another time; its
// group and its parent see it until it is reaped.
func TestProcHelpers(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := os.Getpid()
	start := StartTime(self)
	if start == 0 {
		t.Fatal("StartTime(self) = 0")
	}
	if !Alive(self, start) || !Alive(self, 0) {
		t.Error("Alive(self) = false")
	}
	if Alive(self, start+1) || !PidReused(self, start+1) {
		t.Error("a pid recorded with another start time is taken for the same process")
	}
	if PidReused(self, start) || PidReused(self, 0) {
		t.Error("PidReused(self) with its own or an unknown start time")
	}

	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	kidStart := StartTime(pid)
	if kids, err := Children(self); err != nil || !slices.Contains(kids, pid) {
		t.Errorf("Children(self) = %v, %v; want it to hold %d", kids, err, pid)
	}
	if m := GroupMembers(pid); !slices.Equal(m, []int{pid}) {
		t.Errorf("GroupMembers(%d) = %v, want just it", pid, m)
	}
	if !Alive(pid, kidStart) {
		t.Errorf("Alive(%d) = false while it runs", pid)
	}

	// Killed, not reaped: a zombie, no longer alive, its pid not reused.
	cmd.Process.Signal(syscall.SIGKILL)
	for end := time.Now().Add(5 * time.Second); Alive(pid, kidStart); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("pid %d alive 5s after SIGKILL", pid)
		}
	}
	if PidReused(pid, kidStart) {
		t.Errorf("PidReused(%d) for its own zombie", pid)
	}
	if m := GroupMembers(pid); len(m) != 0 {
		t.Errorf("GroupMembers(%d) = %v: a zombie counted", pid, m)
	}
	cmd.Wait()
	if Alive(pid, kidStart) || PidReused(pid, kidStart) {
		t.Errorf("pid %d: reaped, yet alive or reused", pid)
	}
}
