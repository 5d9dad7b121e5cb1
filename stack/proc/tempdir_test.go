package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A temp dir is named after the process that made it, and the next
// TempDir removes those of processes that are gone (a test killed before
// its cleanup): never a live process's.
func TestTempDirSweepsTheDeads(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead, err := os.MkdirTemp("", fmt.Sprintf("lockladder-%d-stack-", gone.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dead) })
	live, err := os.MkdirTemp("", fmt.Sprintf("lockladder-%d-stack-", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(live) })

	d, err := TempDir("stack")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if want := fmt.Sprintf("lockladder-%d-stack-", os.Getpid()); !strings.HasPrefix(filepath.Base(d), want) {
		t.Errorf("TempDir made %s, want a name starting %s", d, want)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dir of process %d, gone, is still there: %v", gone.Process.Pid, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the dir of process %d, alive, was removed: %v", os.Getppid(), err)
	}
}
