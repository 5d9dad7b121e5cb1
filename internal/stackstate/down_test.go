package stackstate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// down signals a recorded pid only with the start time recorded with it:
// one recorded with another start time, or with none (0: unknown), may
// name another process by now and is left alone, and down says so; one
// recorded with its own is killed.
func TestDownSignalsOnlyPidsItCanTell(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	sleep := func() *exec.Cmd {
		t.Helper()
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	supervisor, unknown, other, ours := sleep(), sleep(), sleep(), sleep()
	start := func(c *exec.Cmd) uint64 { return stack.ProcStart(c.Process.Pid) }
	st := State{
		Pid: supervisor.Process.Pid, Start: 0, // an old state file, or no /proc when it was written
		Procs: []Proc{
			{unknown.Process.Pid, 0},
			{other.Process.Pid, start(other) + 1}, // its pid given to another process since
			{ours.Process.Pid, start(ours)},
		},
	}
	path := filepath.Join(t.TempDir(), "stack.json")
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	var w strings.Builder
	if err := Down(path, &w); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	t.Log(out)
	for _, c := range []*exec.Cmd{supervisor, unknown, other} {
		if !stack.ProcAlive(c.Process.Pid, start(c)) {
			t.Errorf("pid %d was signalled: its recorded start time was not its own", c.Process.Pid)
		}
	}
	for end := time.Now().Add(5 * time.Second); stack.ProcAlive(ours.Process.Pid, start(ours)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("pid %d, recorded with its own start time, alive after down", ours.Process.Pid)
		}
	}
	for _, want := range []string{"supervisor pid", "no start time recorded", "2 recorded pid(s) without a start time left alone"} {
		if !strings.Contains(out, want) {
			t.Errorf("down printed %q, want it to say %q", out, want)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("state file left: %v", err)
	}
}
