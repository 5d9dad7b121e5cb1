package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// What /proc says about a process by its pid, for a process the stack no
// longer holds (cmd/stack's down reads pids from its state file) or one
// it did not start itself (nginx's workers). Where there is no /proc
// (outside Linux) a start time is unknown (0) and a process has no
// children or group members that can be listed.

// StartTime is process pid's start time in clock ticks after boot (field
// 22 of /proc/PID/stat), 0 when unknown. A pid with its start time names
// one process for good: cmd/stack records both, so that down never
// signals a pid the kernel has since given to an unrelated process.
func StartTime(pid int) uint64 {
	f, err := procStat(pid)
	if err != nil || len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// Alive reports whether pid runs (a zombie does not: it has exited,
// only its parent's wait is missing) and is the process that started at
// start (StartTime; 0 means unknown and is trusted).
func Alive(pid int, start uint64) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if now := StartTime(pid); start != 0 && now != 0 && now != start {
		return false
	}
	if f, err := procStat(pid); err == nil && len(f) > 0 && f[0] == "Z" {
		return false
	}
	return true
}

// PidReused reports whether pid is now in use by another process than the
// one that started at start: false when it is free, still that process
// (maybe a zombie), or either start time is unknown.
func PidReused(pid int, start uint64) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	now := StartTime(pid)
	return start != 0 && now != 0 && now != start
}

// GroupMembers lists the running (not zombie) processes in process group
// pgid.
func GroupMembers(pgid int) []int {
	if syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	all, _ := procPids()
	var pids []int
	for _, pid := range all {
		f, err := procStat(pid)
		if err != nil || len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// Children lists the processes whose parent is pid (an error where there
// is no /proc).
func Children(pid int) ([]int, error) {
	all, err := procPids()
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, n := range all {
		f, err := procStat(n)
		if err != nil {
			continue // gone meanwhile
		}
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids, nil
}

// procPids lists the pids in /proc.
func procPids() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

// procStat is /proc/PID/stat's fields after "(comm)", from state on:
// state, ppid, pgrp, ... (comm may hold spaces and parens).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, os.ErrInvalid
	}
	return strings.Fields(s[i+1:]), nil
}
