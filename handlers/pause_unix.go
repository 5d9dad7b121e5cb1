//go:build unix

package handlers

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// resumeEnv, when set in this binary's environment, makes it the resumer
// of a stopped process rather than whatever it normally is.
const resumeEnv = "LOCKLADDER_RESUME"

// resumeUntilEnv carries what the resumer watches for until=written
// (Written, as JSON).
const resumeUntilEnv = "LOCKLADDER_RESUME_UNTIL"

// StopProcess stops this whole process with SIGSTOP for d: every
// goroutine, timers and watchdogs included, as a long GC pause or a
// frozen VM would. A child (this same binary, see ResumeIfAsked) sends
// SIGCONT after d.
func StopProcess(d time.Duration) error { return StopProcessUntil(d, nil) }

// StopProcessUntil is StopProcess, and with w, the child also waits,
// after d, until w's counter has moved since the stop (another request
// wrote the item), at most d more.
func StopProcessUntil(d time.Duration, w *Written) error {
	// This binary as the kernel holds it, not its path: a binary rebuilt
	// in place while the stack runs (make build) still resumes us.
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("handlers: pause: %w", err)
		}
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", resumeEnv, os.Getpid(), d))
	if w != nil {
		cmd.Env = append(cmd.Env, resumeUntilEnv+"="+w.encode())
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("handlers: pause: %w", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("handlers: pause: %w", err)
	}
	// We run again: the resumer sent SIGCONT. Reap it.
	return cmd.Wait()
}

// ResumeIfAsked must be the first thing main does in a binary that serves
// these handlers with faults (StopProcess re-runs it as the resumer): in
// the resumer child it waits, resumes the stopped parent and exits;
// otherwise it returns at once.
func ResumeIfAsked() {
	v, ok := os.LookupEnv(resumeEnv)
	if !ok {
		return
	}
	pidStr, dStr, _ := strings.Cut(v, ":")
	pid, err1 := strconv.Atoi(pidStr)
	d, err2 := strconv.ParseInt(dStr, 10, 64)
	if err1 != nil || err2 != nil || pid <= 1 {
		fmt.Fprintf(os.Stderr, "app: bad %s=%q\n", resumeEnv, v)
		os.Exit(2)
	}
	var moved func() bool
	if u, ok := os.LookupEnv(resumeUntilEnv); ok {
		w, err := decodeWritten(u)
		if err != nil {
			fmt.Fprintf(os.Stderr, "app: bad %s: %v\n", resumeUntilEnv, err)
			_ = syscall.Kill(pid, syscall.SIGCONT)
			os.Exit(2)
		}
		moved = w.watcher() // its connection ends with this process
	}
	waitStopped(pid)
	start := time.Now()
	if moved == nil {
		time.Sleep(time.Duration(d))
	} else {
		// The counter's first read is taken in watcher, before the
		// stop is seen: a write that lands between the two counts.
		resumeWhen(start, time.Duration(d), 2*time.Duration(d), 2*time.Millisecond, moved)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		fmt.Fprintf(os.Stderr, "app: resume %d: %v\n", pid, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// waitStopped waits (at most a second) until /proc says pid is stopped, so
// that the pause is measured from the stop, not from our start. Where there
// is no /proc it returns at once.
func waitStopped(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// The state is the first field after the parenthesised command.
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
