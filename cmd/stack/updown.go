package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// up starts `stack run` with the same arguments as a background process in
// a new session and returns once it has recorded a healthy stack.
func up(ctx context.Context, o options, args []string) error {
	if st, ok := liveState(o.State); ok {
		fmt.Printf("already up at %s (pid %d); stop it with `stack down`\n", st.URL, st.Pid)
		return nil
	}
	if err := prepareRunDir(o.Dir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(o.Dir, "stack.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, append([]string{"run"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(90 * time.Second)
	for {
		if st, err := readState(o.State); err == nil && st.Pid == cmd.Process.Pid {
			for _, l := range st.Summary {
				fmt.Println(l)
			}
			fmt.Printf("up at %s (supervisor pid %d, log %s); stop with `stack down`\n", st.URL, st.Pid, logPath)
			return nil
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("the stack did not start (%v); %s:\n%s", err, logPath, b)
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			return ctx.Err()
		case <-deadline:
			cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the stack is not up after 90s; see %s", logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// down stops the stack recorded in the state file: SIGTERM to the
// supervisor, which stops its children; then SIGKILL to any recorded
// process (and its process group) still alive. A pid is signalled only
// while it has the start time recorded with it (stack.ProcStart): one
// recorded without (0: unknown, as outside Linux) may name another
// process by now, and is left alone, with a word saying so.
func down(o options) error {
	st, err := readState(o.State)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Printf("nothing is up (no %s)\n", o.State)
		return nil
	}
	if err != nil {
		return err
	}
	unknown := 0
	switch {
	case st.Start == 0:
		unknown++
		fmt.Printf("supervisor pid %d: no start time recorded, so it cannot be told from a process that got its pid since: not signalled\n", st.Pid)
	case stack.ProcAlive(st.Pid, st.Start):
		fmt.Printf("stopping the stack at %s (supervisor pid %d)\n", st.URL, st.Pid)
		syscall.Kill(st.Pid, syscall.SIGTERM)
		if !waitGone(st.Pid, st.Start, 30*time.Second) && stack.ProcAlive(st.Pid, st.Start) {
			fmt.Printf("supervisor pid %d still running after 30s: SIGKILL\n", st.Pid)
			syscall.Kill(st.Pid, syscall.SIGKILL)
			waitGone(st.Pid, st.Start, 5*time.Second)
		}
	default:
		fmt.Printf("supervisor pid %d is gone; cleaning up after it\n", st.Pid)
	}
	for _, p := range st.Procs {
		switch {
		case p.Start == 0:
			unknown++
			fmt.Printf("pid %d: no start time recorded: not signalled (it may be another process by now)\n", p.Pid)
		case stack.ProcAlive(p.Pid, p.Start):
			fmt.Printf("pid %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL) // its group: nginx workers too
			syscall.Kill(p.Pid, syscall.SIGKILL)
		case !stack.PidReused(p.Pid, p.Start) && len(stack.GroupMembers(p.Pid)) > 0:
			// The leader has exited (gone, or a zombie nobody reaped) but
			// its group has not: orphaned nginx workers. The group id
			// cannot be reused while the group has members.
			fmt.Printf("process group %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
	}
	os.Remove(o.State)
	if unknown > 0 {
		fmt.Printf("stack stopped as far as it can tell: %d recorded pid(s) without a start time left alone; stop them yourself if they are the stack's\n", unknown)
		return nil
	}
	fmt.Println("stack stopped")
	return nil
}

func waitGone(pid int, start uint64, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !stack.ProcAlive(pid, start) {
			return true
		}
	}
	return false
}
