package proc

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// The servers' account, missing, is made once however many stacks want
// it at the same moment (test packages, worktrees, in processes of their
// own: useradd locks the account files, and the loser finds the
// winner's): each gets the same account, a system one that is not root.
func TestServerAccountMadeOnceByMany(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: no account to make")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skipf("no useradd: %v", err)
	}
	name := fmt.Sprintf("lltest%d", os.Getpid()%100000)
	if _, err := lookupAccount(name); err == nil {
		t.Fatalf("account %s exists already", name)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	const n = 6
	accounts := make([]*Account, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			accounts[i], errs[i] = serverAccount(name)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("stack %d: %v", i, errs[i])
		}
		if *accounts[i] != *accounts[0] {
			t.Errorf("stack %d got %+v, stack 0 %+v", i, accounts[i], accounts[0])
		}
	}
	if a := accounts[0]; a.UID == 0 || a.Name != name || a.Group != name {
		t.Errorf("made %+v, want %s in a group of its own, not root", a, name)
	}
}
