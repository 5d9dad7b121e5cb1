package main

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

// state is .run/stack.json: the supervisor (a `stack run` process) and
// every process it started (Redis, the redis-server masters, nginx, the
// instances). Each pid comes with its start time (stack.ProcStart), so
// down never signals a pid the kernel has since given to an unrelated
// process.
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
		Start:     stack.ProcStart(os.Getpid()),
		URL:       s.URL(),
		Instances: s.InstanceURLs(),
		Redis:     s.RedisAddr(),
		Masters:   s.MasterAddrs(),
		Summary:   s.Summary(),
		Dir:       s.Dir(),
		Updated:   time.Now(),
	}
	for _, pid := range s.Pids() {
		st.Procs = append(st.Procs, procRef{pid, stack.ProcStart(pid)})
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
	if stack.ProcAlive(st.Pid, st.Start) {
		return st, true
	}
	os.Remove(path)
	return st, false
}
