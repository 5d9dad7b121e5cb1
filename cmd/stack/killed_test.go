package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/stackstate"
	"github.com/lockladder/lockladder/stack"
)

// buildStack builds bin/app and bin/stack into a temp dir.
func buildStack(t *testing.T) (bin string) {
	t.Helper()
	bin = t.TempDir()
	for _, pkg := range []string{"app", "stack"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", pkg, err, out)
		}
	}
	return bin
}

// supervisor is a `stack run` started by a test, its output in out.
type supervisor struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// startRun starts `stack run` on free ports in dir, with a Redis, one
// master, etcd (its data in tmpfs where there is one), one instance and a
// load balancer, and waits until it has recorded itself. Without the
// parent-death signal (stack.NoDeathSignalEnv), its servers outlive a
// SIGKILL of it, as they do outside Linux.
func startRun(t *testing.T, bin, dir string, noDeathSignal bool) (*supervisor, stackstate.State) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "stack"), "run", "-dir", dir,
		"-lb-port", "0", "-app-port", "0", "-redis-port", "0", "-masters", "1", "-instances", "1",
		"-zookeeper", "off", "-mariadb", "off", "-etcd", "auto",
		"-app", filepath.Join(bin, "app"), "-nginx-conf", "../../nginx.conf")
	s := &supervisor{cmd: cmd, out: new(syncBuffer), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.Env = os.Environ()
	if noDeathSignal {
		cmd.Env = append(cmd.Env, stack.NoDeathSignalEnv+"=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		exec.Command(filepath.Join(bin, "stack"), "down", "-dir", dir).Run()
	})
	deadline := time.After(120 * time.Second)
	for {
		if st, err := stackstate.Read(filepath.Join(dir, "stack.json")); err == nil && st.Pid == cmd.Process.Pid {
			return s, st
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("stack run exited (%v): %s\n--- its output ---\n%s", err, lastLines(s.out.String(), 3), s.out)
		case <-deadline:
			t.Fatalf("stack run recorded no state in 120s: %s\n--- its output ---\n%s", lastLines(s.out.String(), 3), s.out)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastLines is the last n lines of out, joined by " | ": what the
// supervisor said last, on the failure's first line (all a CI summary
// shows).
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// syncBuffer is a bytes.Buffer the test reads while the process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// kill SIGKILLs the supervisor and waits until it has exited.
func (s *supervisor) kill(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.done <- nil
}

// alive lists the recorded processes (or their groups) still running.
func alive(st stackstate.State) []int {
	var pids []int
	for _, p := range st.Procs {
		if stack.ProcAlive(p.Pid, p.Start) || (!stack.PidReused(p.Pid, p.Start) && len(stack.GroupMembers(p.Pid)) > 0) {
			pids = append(pids, p.Pid)
		}
	}
	return pids
}

// wantCleanedUp fails t unless every recorded process, the state file and
// the tmpfs data are gone.
func wantCleanedUp(t *testing.T, st stackstate.State, state string) {
	t.Helper()
	if pids := alive(st); len(pids) > 0 {
		t.Errorf("recorded processes %v still alive", pids)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left behind: %v", err)
	}
	if st.Data != "" {
		if _, err := os.Stat(st.Data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("tmpfs data %s left behind: %v", st.Data, err)
		}
	}
}

// After a SIGKILL of the supervisor, its servers run on (no death signal,
// as outside Linux) and its tmpfs data stays; `stack down` stops exactly
// the recorded processes and removes the data and the state file.
func TestDownAfterKilledSupervisor(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	bin, dir := buildStack(t), t.TempDir()
	s, st := startRun(t, bin, dir, true)
	t.Logf("recorded: %d processes, data %q", len(st.Procs), st.Data)
	s.kill(t)
	if len(alive(st)) == 0 {
		t.Fatalf("no recorded server outlived the supervisor, nothing for down to do: %+v", st)
	}
	out, err := exec.Command(filepath.Join(bin, "stack"), "down", "-dir", dir).CombinedOutput()
	t.Logf("stack down:\n%s", out)
	if err != nil {
		t.Fatalf("stack down: %v", err)
	}
	if !strings.Contains(string(out), "is gone; cleaning up after it") {
		t.Errorf("down did not say the supervisor was gone")
	}
	wantCleanedUp(t, st, filepath.Join(dir, "stack.json"))
}

// The next `stack run` (as `make demo`) cleans up after a killed
// supervisor before it starts, instead of forgetting its processes; and
// SIGHUP (a closed terminal) stops a stack as Ctrl-C does: every process
// stopped, the data and the state file removed.
func TestRunCleansUpAfterKilledSupervisorAndStopsOnSIGHUP(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	bin, dir := buildStack(t), t.TempDir()
	killed, old := startRun(t, bin, dir, true)
	killed.kill(t)
	if len(alive(old)) == 0 {
		t.Fatalf("no recorded server outlived the supervisor: %+v", old)
	}

	s, st := startRun(t, bin, dir, false)
	if !strings.Contains(s.out.String(), "is gone; cleaning up after it") {
		t.Errorf("the next run did not say it cleaned up:\n%s", s.out)
	}
	wantCleanedUp(t, old, filepath.Join(dir, "no-such-state")) // its state is the new one's now

	s.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Errorf("stack run on SIGHUP: %v\n%s", err, s.out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("stack run still running 60s after SIGHUP:\n%s", s.out)
	}
	if !strings.Contains(s.out.String(), "stack: stopped") {
		t.Errorf("stack run did not stop its stack on SIGHUP:\n%s", s.out)
	}
	wantCleanedUp(t, st, filepath.Join(dir, "stack.json"))
}

// A supervisor that exits while starting is named by its last words on
// the failure's first line.
func TestLastLines(t *testing.T) {
	out := "redis: up\netcd: up\nstack: postgres: initdb: signal: killed\n"
	if got, want := lastLines(out, 2), "etcd: up | stack: postgres: initdb: signal: killed"; got != want {
		t.Errorf("lastLines = %q, want %q", got, want)
	}
	if got := lastLines("", 3); got != "" {
		t.Errorf("lastLines of nothing = %q", got)
	}
}
