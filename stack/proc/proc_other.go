//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts each child in its own process group. Outside Linux there
// is no parent-death signal: a crashed supervisor can leave children behind
// (cmd/stack down still kills them from the state file).
func sysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
