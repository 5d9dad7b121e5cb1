package stackstate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// Live returns the recorded stack if its supervisor still runs. If the
// supervisor is gone without its Stop (killed, crashed), what it left is
// cleaned up first, saying so on w: the recorded processes still alive
// are stopped and its tmpfs data removed, then the state file. So a new
// stack never forgets the processes that hold its ports.
func Live(path string, w io.Writer) (State, bool) {
	st, err := Read(path)
	if err != nil {
		return st, false
	}
	if stack.ProcAlive(st.Pid, st.Start) {
		return st, true
	}
	fmt.Fprintf(w, "stack: the supervisor recorded in %s (pid %d) is gone; cleaning up after it\n", path, st.Pid)
	cleanup(st, w)
	os.Remove(path)
	return st, false
}

// Down stops the stack recorded in path: SIGTERM to the supervisor, which
// stops its children; then SIGKILL to any recorded process (and its
// process group) still alive, and the removal of the recorded tmpfs data
// and of the state file. A pid is signalled only while it has the start
// time recorded with it (stack.ProcStart): one recorded without (0:
// unknown, as outside Linux) may name another process by now, and is left
// alone, with a word saying so.
func Down(path string, w io.Writer) error {
	st, err := Read(path)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(w, "nothing is up (no %s)\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	unknown := 0
	switch {
	case st.Start == 0:
		unknown++
		fmt.Fprintf(w, "supervisor pid %d: no start time recorded, so it cannot be told from a process that got its pid since: not signalled\n", st.Pid)
	case stack.ProcAlive(st.Pid, st.Start):
		fmt.Fprintf(w, "stopping the stack at %s (supervisor pid %d)\n", st.URL, st.Pid)
		syscall.Kill(st.Pid, syscall.SIGTERM)
		if !waitGone(st.Pid, st.Start, 30*time.Second) && stack.ProcAlive(st.Pid, st.Start) {
			fmt.Fprintf(w, "supervisor pid %d still running after 30s: SIGKILL\n", st.Pid)
			syscall.Kill(st.Pid, syscall.SIGKILL)
			waitGone(st.Pid, st.Start, 5*time.Second)
		}
	default:
		fmt.Fprintf(w, "supervisor pid %d is gone; cleaning up after it\n", st.Pid)
	}
	unknown += cleanup(st, w)
	os.Remove(path)
	if unknown > 0 {
		fmt.Fprintf(w, "stack stopped as far as it can tell: %d recorded pid(s) without a start time left alone; stop them yourself if they are the stack's\n", unknown)
		return nil
	}
	fmt.Fprintln(w, "stack stopped")
	return nil
}

// cleanup kills the recorded processes still alive (each checked by its
// start time), waits until they are gone, and removes the recorded tmpfs
// data, and, once they are gone, the files they left
// (stack.RemoveLeftovers). It returns how many pids it left alone for want of a start time.
func cleanup(st State, w io.Writer) (unknown int) {
	var killed []Proc
	for _, p := range st.Procs {
		switch {
		case p.Start == 0:
			unknown++
			fmt.Fprintf(w, "pid %d: no start time recorded: not signalled (it may be another process by now)\n", p.Pid)
		case stack.ProcAlive(p.Pid, p.Start):
			fmt.Fprintf(w, "pid %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL) // its group: nginx workers too
			syscall.Kill(p.Pid, syscall.SIGKILL)
			killed = append(killed, p)
		case !stack.PidReused(p.Pid, p.Start) && len(stack.GroupMembers(p.Pid)) > 0:
			// The leader has exited (gone, or a zombie nobody reaped) but
			// its group has not: orphaned nginx workers. The group id
			// cannot be reused while the group has members.
			fmt.Fprintf(w, "process group %d still alive: SIGKILL\n", p.Pid)
			syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
	}
	// Their files and ports are free only once they are gone (a SIGKILL
	// cannot be caught; init reaps orphans).
	gone := unknown == 0
	for _, p := range killed {
		if !waitGone(p.Pid, p.Start, 5*time.Second) {
			fmt.Fprintf(w, "pid %d still alive 5s after its SIGKILL\n", p.Pid)
			gone = false
		}
	}
	if st.Data != "" {
		switch removed, err := stack.RemoveData(st.Data, st.Pid); {
		case err != nil:
			fmt.Fprintf(w, "data %s: %v\n", st.Data, err)
		case removed:
			fmt.Fprintf(w, "data %s removed\n", st.Data)
		}
	}
	// A killed server leaves files it would remove itself (PostgreSQL's
	// socket, a Redis config with its password): removed once nothing
	// of the stack's can be using them.
	if st.Dir != "" && gone {
		removed, err := stack.RemoveLeftovers(st.Dir, st.Pid)
		if len(removed) > 0 {
			fmt.Fprintf(w, "removed what its servers left: %s\n", strings.Join(removed, " "))
		}
		if err != nil {
			fmt.Fprintf(w, "its servers' files: %v\n", err)
		}
	}
	return unknown
}

func waitGone(pid int, start uint64, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !stack.ProcAlive(pid, start) {
			return true
		}
	}
	return false
}
