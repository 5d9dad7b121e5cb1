package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/stackstate"
	"github.com/lockladder/lockladder/stack"
)

// built is bin/app and bin/stack, built once for the package's tests
// (each build took minutes on a loaded machine), in a dir TestMain
// removes.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildStack builds bin/app and bin/stack, once, and returns their dir.
func buildStack(t *testing.T) (bin string) {
	t.Helper()
	built.once.Do(func() {
		began := time.Now()
		if built.dir, built.err = os.MkdirTemp("", "stack-bin-"); built.err != nil {
			return
		}
		for _, pkg := range []string{"app", "stack"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(built.dir, pkg), "../"+pkg).CombinedOutput()
			if err != nil {
				built.err = fmt.Errorf("go build ./cmd/%s: %v\n%s", pkg, err, out)
				return
			}
		}
		t.Logf("built bin/app and bin/stack in %s", time.Since(began).Round(time.Millisecond))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
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
	began := time.Now()
	deadline := time.After(120 * time.Second)
	for {
		if st, err := stackstate.Read(filepath.Join(dir, "stack.json")); err == nil && st.Pid == cmd.Process.Pid {
			t.Logf("stack run up and recorded in %s", time.Since(began).Round(time.Millisecond))
			return s, st
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("stack run exited (%v): %s\n--- its output ---\n%s%s", err, lastWords(s.out.String()), s.out, logTails(dir, 5))
		case <-deadline:
			t.Fatalf("stack run recorded no state in 120s: %s\n--- its output ---\n%s%s", lastWords(s.out.String()), s.out, logTails(dir, 5))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastWords is what the supervisor said last, for the failure's first
// line (all a CI summary shows): its error (its last line that starts
// with "stack:"; a server's log tail may follow it) and its last 3 lines,
// joined by " | ".
func lastWords(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[max(0, len(lines)-3):]
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "stack:") {
			if i < len(lines)-3 {
				last = append([]string{lines[i], "..."}, last...)
			}
			break
		}
	}
	return strings.Join(last, " | ")
}

// logTails is the last n lines of each log in the run dir and the dirs
// in it (the servers', the apps'), for a failure's message.
func logTails(dir string, n int) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	var b strings.Builder
	for _, l := range append(logs, more...) {
		data, err := os.ReadFile(l)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "\n--- %s (last %d lines) ---\n%s", l, n, strings.Join(lines[max(0, len(lines)-n):], "\n"))
	}
	return b.String()
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

// wantCleanedUp fails t unless every recorded process, the state file,
// the tmpfs data and its servers' leftovers are gone (in its run dir
// too unless another stack runs there now).
func wantCleanedUp(t *testing.T, st stackstate.State, state string, runDirToo bool) {
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
	if left := leftovers(st, runDirToo); len(left) > 0 {
		t.Errorf("its servers' files left behind: %v", left)
	}
}

// leftovers are the files of the stack's servers that a killed server
// leaves and a stopped one does not: a socket (PostgreSQL's, MariaDB's)
// or a pid file anywhere in its run dir, a Redis config (its password),
// MariaDB's init file (its password), and the temp dirs of the servers
// that could not enter the run dir (/tmp/lockladder-PID-*).
func leftovers(st stackstate.State, runDirToo bool) []string {
	var found []string
	dir := st.Dir
	if !runDirToo {
		dir = "" // another stack runs in it now
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		switch {
		case d.Type()&fs.ModeSocket != 0, strings.HasSuffix(name, ".pid"), name == "init.sql",
			strings.HasPrefix(name, "redis-") && strings.HasSuffix(name, ".conf"):
			found = append(found, p)
		}
		return nil
	})
	for _, root := range []string{os.TempDir(), "/tmp"} {
		temps, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("lockladder-%d-*", st.Pid)))
		found = append(found, temps...)
	}
	return found
}

// runDir is a run dir the servers' account may enter, as make up's .run
// in a clone is: their files are in it (t.TempDir's parent lets only its
// owner in, and they go to temp dirs of their own).
func runDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "stack-killed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// After a SIGKILL of the supervisor, its servers run on (no death signal,
// as outside Linux) and its tmpfs data stays; `stack down` stops exactly
// the recorded processes and removes the data and the state file.
func TestDownAfterKilledSupervisor(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	bin, dir := buildStack(t), runDir(t)
	s, st := startRun(t, bin, dir, true)
	t.Logf("recorded: %d processes, data %q", len(st.Procs), st.Data)
	s.kill(t)
	if len(alive(st)) == 0 {
		t.Fatalf("no recorded server outlived the supervisor, nothing for down to do: %+v", st)
	}
	// Killed by down, its servers leave their sockets and pid files:
	// PostgreSQL's socket and lock file at least, when it runs.
	pg := slices.ContainsFunc(st.Summary, func(l string) bool { return strings.HasPrefix(l, "postgres:") })
	if sockets, _ := filepath.Glob(filepath.Join(dir, "postgres", ".s.PGSQL.*")); pg && len(sockets) == 0 {
		t.Errorf("PostgreSQL runs, but no socket of its in %s: the check below would prove nothing", dir)
	}
	out, err := exec.Command(filepath.Join(bin, "stack"), "down", "-dir", dir).CombinedOutput()
	t.Logf("stack down:\n%s", out)
	if err != nil {
		t.Fatalf("stack down: %v", err)
	}
	if !strings.Contains(string(out), "is gone; cleaning up after it") {
		t.Errorf("down did not say the supervisor was gone")
	}
	wantCleanedUp(t, st, filepath.Join(dir, "stack.json"), true)
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
	wantCleanedUp(t, old, filepath.Join(dir, "no-such-state"), false) // its state and run dir are the new one's now

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
	wantCleanedUp(t, st, filepath.Join(dir, "stack.json"), true)
}

// A supervisor that exits while starting is named by its last words on
// the failure's first line: its error, though a server's log follows it.
func TestLastWords(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"redis: up\netcd: up\nstack: postgres: initdb: signal: killed\n", "redis: up | etcd: up | stack: postgres: initdb: signal: killed"},
		{"redis: up\nstack: postgres exited while starting: exit status 1\n--- postgres.log (tail) ---\nFATAL: x\nFATAL: y\nFATAL: z\n",
			"stack: postgres exited while starting: exit status 1 | ... | FATAL: x | FATAL: y | FATAL: z"},
		{"", ""},
	} {
		if got := lastWords(c.out); got != c.want {
			t.Errorf("lastWords(%q) = %q, want %q", c.out, got, c.want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "app1.log"), []byte("a\nb\nc\n"), 0o644)
	if got := logTails(dir, 2); !strings.Contains(got, "app1.log (last 2 lines) ---\nb\nc") {
		t.Errorf("logTails = %q, want app1.log's last 2 lines", got)
	}
}
