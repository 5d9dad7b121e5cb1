package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/internal/stackstate"
)

// up starts `stack run` with the same arguments as a background process in
// a new session and returns once it has recorded a healthy stack.
func up(ctx context.Context, o options, args []string) error {
	if st, ok := stackstate.Live(o.State, os.Stderr); ok {
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
		if st, err := stackstate.Read(o.State); err == nil && st.Pid == cmd.Process.Pid {
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
