package stackstate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// ErrDone, returned by a Run hook, stops the stack at once instead of
// waiting for ctx to end.
var ErrDone = errors.New("done")

// Run is `stack run`: it starts the stack cfg describes, prints its URL
// on out, records it in the state file at path (kept fresh while it
// runs), calls hook (if any) and then serves until ctx ends (SIGINT,
// SIGTERM or SIGHUP: a closed terminal), or at once if hook returns
// ErrDone. Progress goes to errw. Everything is stopped, and the state
// file removed, before it returns. A stack recorded there whose
// supervisor still runs is refused; one whose supervisor died is
// cleaned up first (Live).
func Run(ctx context.Context, cfg stack.Config, path string, out, errw io.Writer, hook func(context.Context, *stack.Stack) error) (err error) {
	if st, ok := Live(path, errw); ok {
		return fmt.Errorf("a stack is already up at %s (pid %d): stop it with `stack down` first", st.URL, st.Pid)
	}
	if err := PrepareRunDir(filepath.Dir(path)); err != nil {
		return err
	}
	s, err := stack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	stateCtx, stopState := context.WithCancel(ctx)
	stateDone := make(chan struct{})
	defer func() {
		stopState()
		<-stateDone
		fmt.Fprintln(errw, "stack: stopping")
		err = errors.Join(err, s.Stop())
		os.Remove(path)
		if err == nil {
			fmt.Fprintln(errw, "stack: stopped")
		}
	}()
	fmt.Fprintln(out, "url:", s.URL())
	if err := Write(path, s); err != nil {
		close(stateDone)
		return err
	}
	go func() {
		defer close(stateDone)
		Keep(stateCtx, path, s)
	}()
	if hook != nil {
		if err := hook(ctx, s); errors.Is(err, ErrDone) {
			return nil
		} else if err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// PrepareRunDir creates the run dir and keeps it out of git without
// touching the repo's .gitignore.
func PrepareRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(gi); errors.Is(err, os.ErrNotExist) {
		return os.WriteFile(gi, []byte("# Written by cmd/stack: run files, never committed.\n*\n"), 0o644)
	}
	return nil
}

// upWait bounds Up: the supervisor's start, ZooKeeper's and MariaDB's
// included, under a loaded machine.
const upWait = 90 * time.Second

// Up is `stack up`: it starts this binary as `stack run args...` in a
// new session, its output in the run dir's stack.log, and returns once
// that process has recorded a healthy stack in the state file at path,
// whose summary it prints on out. A stack already up there is said so,
// not started again.
func Up(ctx context.Context, path string, args []string, out io.Writer) error {
	if st, ok := Live(path, os.Stderr); ok {
		fmt.Fprintf(out, "already up at %s (pid %d); stop it with `stack down`\n", st.URL, st.Pid)
		return nil
	}
	dir := filepath.Dir(path)
	if err := PrepareRunDir(dir); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "stack.log")
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
	deadline := time.After(upWait)
	for {
		if st, err := Read(path); err == nil && st.Pid == cmd.Process.Pid {
			for _, l := range st.Summary {
				fmt.Fprintln(out, l)
			}
			fmt.Fprintf(out, "up at %s (supervisor pid %d, log %s); stop with `stack down`\n", st.URL, st.Pid, logPath)
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
			return fmt.Errorf("the stack is not up after %s; see %s", upWait, logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
