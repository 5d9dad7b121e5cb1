package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// state is .run/stack.json: the supervisor (a `stack run` process) and
// every process it started (Redis, the redis-server masters, nginx, the
// instances). Each pid comes with its start time from /proc, so down never
// signals a pid the kernel has since given to an unrelated process.
type state struct {
	Pid       int       `json:"pid"`
	Start     uint64    `json:"start"`
	URL       string    `json:"url"`
	Instances []string  `json:"instances"`
	Redis     string    `json:"redis"`
	Masters   []string  `json:"masters,omitempty"`
	Summary   []string  `json:"summary"`
	Procs     []procRef `json:"procs"`
	Dir       string    `json:"dir"`
	Updated   time.Time `json:"updated"`
}

type procRef struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func writeState(path string, s *stack.Stack) error {
	st := state{
		Pid:       os.Getpid(),
		Start:     procStart(os.Getpid()),
		URL:       s.URL(),
		Instances: s.InstanceURLs(),
		Redis:     s.RedisAddr(),
		Masters:   s.MasterAddrs(),
		Summary:   s.Summary(),
		Dir:       s.Dir(),
		Updated:   time.Now(),
	}
	for _, pid := range s.Pids() {
		st.Procs = append(st.Procs, procRef{pid, procStart(pid)})
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return os.Rename(tmp, path)
}

// keepState rewrites the state file when the supervisor has restarted an
// instance, so down knows the current pids.
func keepState(ctx context.Context, path string, s *stack.Stack) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	last := s.Pids()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if pids := s.Pids(); !slices.Equal(pids, last) {
			last = pids
			writeState(path, s)
		}
	}
}

func readState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// liveState returns the recorded stack if its supervisor still runs; a
// stale state file is removed.
func liveState(path string) (state, bool) {
	st, err := readState(path)
	if err != nil {
		return st, false
	}
	if alive(st.Pid, st.Start) {
		return st, true
	}
	os.Remove(path)
	return st, false
}

// alive reports whether pid runs and is the process that was recorded
// (same start time; 0 means unknown and is trusted).
func alive(pid int, start uint64) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if now := procStart(pid); start != 0 && now != 0 && now != start {
		return false
	}
	// A zombie has exited; only its parent's wait is missing.
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if f := statFields(b); len(f) > 0 && f[0] == "Z" {
		return false
	}
	return true
}

// samePid reports whether pid is not in use by another process than the
// recorded one: it is free, or it is still the recorded one (maybe a zombie).
func samePid(pid int, start uint64) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	now := procStart(pid)
	return start == 0 || now == 0 || now == start
}

// groupMembers lists the running (not zombie) processes in process group
// pgid, from /proc.
func groupMembers(pgid int) []int {
	if syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		f := statFields(b)
		if err != nil || len(f) < 3 || f[0] == "Z" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		pids = append(pids, pid)
	}
	return pids
}

// procStart is the process's start time in clock ticks after boot (field
// 22 of /proc/PID/stat), 0 when unknown.
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := statFields(b)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// statFields are the /proc/PID/stat fields after "(comm)", from state on.
func statFields(b []byte) []string {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

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
// process (and its process group) still alive.
func down(o options) error {
	st, err := readState(o.State)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Printf("nothing is up (no %s)\n", o.State)
		return nil
	}
	if err != nil {
		return err
	}
	if alive(st.Pid, st.Start) {
		fmt.Printf("stopping the stack at %s (supervisor pid %d)\n", st.URL, st.Pid)
		syscall.Kill(st.Pid, syscall.SIGTERM)
		if !waitGone(st.Pid, st.Start, 30*time.Second) {
			fmt.Printf("supervisor pid %d still running after 30s: SIGKILL\n", st.Pid)
			syscall.Kill(st.Pid, syscall.SIGKILL)
			waitGone(st.Pid, st.Start, 5*time.Second)
		}
	} else {
		fmt.Printf("supervisor pid %d is gone; cleaning up after it\n", st.Pid)
	}
	for _, p := range st.Procs {
		switch {
		case alive(p.Pid, p.Start):
			fmt.Printf("pid %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL) // its group: nginx workers too
			syscall.Kill(p.Pid, syscall.SIGKILL)
		case samePid(p.Pid, p.Start) && len(groupMembers(p.Pid)) > 0:
			// The leader has exited (gone, or a zombie nobody reaped) but
			// its group has not: orphaned nginx workers. The group id
			// cannot be reused while the group has members.
			fmt.Printf("process group %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
	}
	os.Remove(o.State)
	fmt.Println("stack stopped")
	return nil
}

func waitGone(pid int, start uint64, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !alive(pid, start) {
			return true
		}
	}
	return false
}
