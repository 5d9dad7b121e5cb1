package stack

import (
	"github.com/lockladder/lockladder/stack/proc"
)

// The names below were the stack's before process supervision moved to
// package proc and the back ends to package backends; their callers
// (cmd/stack's state, the tests' helpers, the explorer's replayer) keep
// them.

const (
	// NoDeathSignalEnv: see proc.NoDeathSignalEnv.
	NoDeathSignalEnv = proc.NoDeathSignalEnv
	// ServerUser: see proc.ServerUser.
	ServerUser = proc.ServerUser
	// DataMemory: see proc.DataMemory.
	DataMemory = proc.DataMemory
	// DataDisk: see proc.DataDisk.
	DataDisk = proc.DataDisk
)

// ProcStart is proc.StartTime: pid's start time, 0 when unknown.
func ProcStart(pid int) uint64 { return proc.StartTime(pid) }

// ProcAlive is proc.Alive: pid runs and is the process that started at
// start.
func ProcAlive(pid int, start uint64) bool { return proc.Alive(pid, start) }

// PidReused is proc.PidReused.
func PidReused(pid int, start uint64) bool { return proc.PidReused(pid, start) }

// GroupMembers is proc.GroupMembers.
func GroupMembers(pgid int) []int { return proc.GroupMembers(pgid) }

// LookPath is proc.LookPath.
func LookPath(name string) (string, error) { return proc.LookPath(name) }

// Install is proc.Install.
func Install(name string) string { return proc.Install(name) }

// RemoveData is proc.RemoveData.
func RemoveData(dir string, pid int) (bool, error) { return proc.RemoveData(dir, pid) }
