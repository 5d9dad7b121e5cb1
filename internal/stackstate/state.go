// Package stackstate is the state file of cmd/stack (.run/stack.json): the
// supervisor (a `stack run` process) and every process it started, each
// with its start time, and the tmpfs dir of the back ends' data, so that
// `stack down`, or the next `stack run`, can stop exactly those processes
// and remove that data after the supervisor died without its Stop (a
// SIGKILL, a crash). It also answers `stack guard` (GuardCommand): who
// holds the run guard of the stack recorded there.
package stackstate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// State is the file's content. Each pid comes with its start time
// (stack.ProcStart), so nothing here ever signals a pid the kernel has
// since given to an unrelated process.
type State struct {
	Pid       int       `json:"pid"`
	Start     uint64    `json:"start"`
	URL       string    `json:"url"`
	Instances []string  `json:"instances"`
	Redis     string    `json:"redis"`
	Masters   []string  `json:"masters,omitempty"`
	Summary   []string  `json:"summary"`
	Procs     []Proc    `json:"procs"`
	Dir       string    `json:"dir"`
	Data      string    `json:"data,omitempty"` // the back ends' tmpfs data dir, if any
	Updated   time.Time `json:"updated"`
}

// Proc is one recorded process: its pid and its start time (0: unknown).
type Proc struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Write records s, run by this process, in path (atomically).
func Write(path string, s *stack.Stack) error {
	st := State{
		Pid:       os.Getpid(),
		Start:     stack.ProcStart(os.Getpid()),
		URL:       s.URL(),
		Instances: s.InstanceURLs(),
		Redis:     s.RedisAddr(),
		Masters:   s.MasterAddrs(),
		Summary:   s.Summary(),
		Dir:       s.Dir(),
		Data:      s.DataDir(),
		Updated:   time.Now(),
	}
	for _, pid := range s.Pids() {
		st.Procs = append(st.Procs, Proc{pid, stack.ProcStart(pid)})
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

// Keep rewrites the state file when the supervisor has restarted an
// instance, so down knows the current pids, until ctx ends.
func Keep(ctx context.Context, path string, s *stack.Stack) {
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
			Write(path, s)
		}
	}
}

// Read reads the state file at path.
func Read(path string) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}
