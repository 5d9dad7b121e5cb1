package proc

import (
	"os"
	"syscall"
)

// sysProcAttr puts each child in its own process group (stopped as a group)
// and has the kernel send it deathSig if the supervising process dies, so
// nothing outlives the stack even after a crash or a SIGKILL of the
// supervisor. (The signal follows the OS thread that started the child;
// the Go runtime does not end threads of goroutines that are not locked to
// them, so in practice it is the process.)
func sysProcAttr(deathSig syscall.Signal) *syscall.SysProcAttr {
	if os.Getenv(NoDeathSignalEnv) == "1" {
		deathSig = 0
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
}
