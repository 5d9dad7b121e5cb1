package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// RemoveData removes only a tmpfs dir named as the stack of that pid names
// its data: a state file naming anything else (edited by hand, or another
// stack's) deletes nothing.
func TestRemoveDataOnlyTheStacks(t *testing.T) {
	if err := shmUsable(); err != nil {
		t.Skip(err)
	}
	other := t.TempDir()
	pid := os.Getpid() + 1_000_000 // no process has it: nothing of ours
	mine, err := os.MkdirTemp(shmDir, "lockladder-"+strconv.Itoa(pid)+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mine) })
	for _, dir := range []string{other, filepath.Join(shmDir, "lockladder-"+strconv.Itoa(pid+1)+"-x"), mine + "/.."} {
		if removed, err := RemoveData(dir, pid); removed || err == nil {
			t.Errorf("RemoveData(%s, %d) = %v, %v: want it refused", dir, pid, removed, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("%s removed: %v", other, err)
	}
	if removed, err := RemoveData(mine, pid); !removed || err != nil {
		t.Errorf("RemoveData(%s) = %v, %v: want it removed", mine, removed, err)
	}
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", mine, err)
	}
	if removed, err := RemoveData(mine, pid); removed || err != nil {
		t.Errorf("RemoveData of a gone dir = %v, %v: want false, nil", removed, err)
	}
}
