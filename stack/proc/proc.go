package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// NoDeathSignalEnv, set to 1 in the supervisor's environment, starts its
// children without the parent-death signal, as outside Linux
// (proc_other.go): a killed supervisor then leaves its servers running.
// Tests set it to show that `stack down` itself, not the kernel, stops
// them.
const NoDeathSignalEnv = "LOCKLADDER_NO_DEATH_SIGNAL"

// StopGrace is how long a process gets between SIGTERM and SIGKILL.
const StopGrace = 5 * time.Second

// Proc is one OS process the stack started, in its own process group (so
// nginx's workers go with their master), with stdout and stderr appended to
// a log file.
type Proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	start   uint64        // its start time (StartTime) when it started; 0 where /proc cannot say
	done    chan struct{} // closed once Wait has returned
	waitErr error         // valid after done
}

// Start starts path with args in its own process group, with env as
// its environment (nil: this process's); output is appended to logPath. A
// goroutine reaps it, so done closes when it exits. On Linux, if this
// process dies, the kernel sends the child SIGKILL (see sysProcAttr).
func Start(name, path string, args, env []string, dir, logPath string) (*Proc, error) {
	return StartSig(name, path, args, env, dir, logPath, syscall.SIGKILL)
}

// StartSig is Start with the signal sent on this process's death.
func StartSig(name, path string, args, env []string, dir, logPath string, deathSig syscall.Signal) (*Proc, error) {
	return StartAs(name, path, args, env, dir, logPath, deathSig, nil)
}

// StartAs is StartSig with the child run as cred (nil: as this
// process), which must be able to enter dir (StartServer, runas.go).
func StartAs(name, path string, args, env []string, dir, logPath string, deathSig syscall.Signal, cred *syscall.Credential) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("stack: %s: log: %w", name, err)
	}
	defer f.Close() // the child has its own copy
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr(deathSig)
	cmd.SysProcAttr.Credential = cred
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stack: start %s: %w", name, err)
	}
	// Read before anything reaps it: the pid is still the child's (at
	// worst a zombie), so its start time names it for good.
	p := &Proc{name: name, logPath: logPath, cmd: cmd, start: StartTime(cmd.Process.Pid), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id it was started with.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Name is the name it was started under, for messages.
func (p *Proc) Name() string { return p.name }

// LogPath is the file its output is appended to.
func (p *Proc) LogPath() string { return p.logPath }

// Process is its os.Process, whose Signal goes to the leader alone (by
// pidfd where there is one: never to a reaped process whose pid was
// reused).
func (p *Proc) Process() *os.Process { return p.cmd.Process }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// WaitErr is what Wait returned (nil for exit status 0); call only after
// Done.
func (p *Proc) WaitErr() error { return p.waitErr }

// Exited reports whether the process has exited (and been reaped).
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr describes how the process ended; call only after Done.
func (p *Proc) ExitErr() error {
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

// Stop sends SIGTERM to the process group, SIGKILL after grace, and waits
// until the leader is reaped and no member of its group is left. Calling it
// on an exited process only sweeps the group. It never signals the pid
// once it names another process (ErrPidReused).
func (p *Proc) Stop(grace time.Duration) error {
	return p.stopBy(p.Signal, syscall.SIGTERM, grace)
}

// StopLeader is Stop for a server whose leader stops its own children and
// takes sig as its order to do so: PostgreSQL's postmaster shuts down
// at once on SIGQUIT, while a SIGTERM to its whole group is a smart
// shutdown that waits out its grace.
func (p *Proc) StopLeader(sig syscall.Signal, grace time.Duration) error {
	return p.stopBy(p.signalLeader, sig, grace)
}

func (p *Proc) stopBy(send func(syscall.Signal) error, sig syscall.Signal, grace time.Duration) error {
	pid := p.Pid()
	if !p.Exited() {
		if err := send(sig); errors.Is(err, ErrPidReused) {
			return err
		}
		select {
		case <-p.done:
		case <-time.After(grace):
			if err := p.Signal(syscall.SIGKILL); errors.Is(err, ErrPidReused) {
				return err
			}
			select {
			case <-p.done:
			case <-time.After(5 * time.Second):
				return fmt.Errorf("stack: %s (pid %d) did not die after SIGKILL", p.name, pid)
			}
		}
	}
	// The leader is gone; anything left in its group (an orphaned nginx
	// worker) is killed too. The group id cannot be reused while the group
	// has members: a group of that id led by a process that got the pid
	// since is not ours, and ours is gone.
	for i := 0; GroupAlive(pid); i++ {
		if p.Reused() {
			return nil
		}
		if i == 0 {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		// 5s: a member killed under load (a Redis Cluster node's fork
		// for a replica's sync) may take a while to be reaped.
		if i > 500 {
			return fmt.Errorf("stack: %s: process group %d survives SIGKILL", p.name, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// ErrPidReused: the pid a proc was started with names another process
// now (its start time differs), which the proc must not signal.
var ErrPidReused = errors.New("its pid names another process now")

// Reused reports whether p's pid names another process than the one
// started: /proc gives it another start time. A leader reaped, its pid
// unused, is not reused: a group of that id, if one is left, is its own.
func (p *Proc) Reused() bool {
	now := StartTime(p.Pid())
	return p.start != 0 && now != 0 && now != p.start
}

// Signal sends sig to p's process group, or to p alone if it leads none,
// unless p's pid names another process by now (ErrPidReused).
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Reused() {
		return fmt.Errorf("stack: %s (pid %d): %w (started at tick %d, not %d): not signalled",
			p.name, p.Pid(), ErrPidReused, StartTime(p.Pid()), p.start)
	}
	if err := syscall.Kill(-p.Pid(), sig); err == nil {
		return nil
	}
	return p.cmd.Process.Signal(sig) // by pidfd where there is one: never another process
}

// signalLeader sends sig to p alone, unless its pid names another
// process by now (ErrPidReused).
func (p *Proc) signalLeader(sig syscall.Signal) error {
	if p.Reused() {
		return fmt.Errorf("stack: %s (pid %d): %w: not signalled", p.name, p.Pid(), ErrPidReused)
	}
	return p.cmd.Process.Signal(sig)
}

// SignalGroup signals the process group led by pid, or pid alone if it
// leads none. pid 0 (nothing running) signals nothing: kill(0) would
// signal this process's own group.
func SignalGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		syscall.Kill(pid, sig)
	}
}

// GroupAlive reports whether process group pgid has a member left.
func GroupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// LogTail returns the last n bytes of a log file, for error messages.
func LogTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- %s (tail) ---\n%s", filepath.Base(path), b)
}

// Logger serialises progress lines from the supervisor goroutines.
type Logger struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLogger returns a Logger writing to w (nil: nowhere).
func NewLogger(w io.Writer) *Logger { return &Logger{w: w} }

// Printf writes one line; a nil Logger, or one without a writer, drops it.
func (l *Logger) Printf(format string, args ...any) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// BinaryVersion runs bin args and returns the first submatch of re in its
// output, or "(unknown version)".
func BinaryVersion(bin, re string, args ...string) string {
	out, _ := exec.Command(bin, args...).CombinedOutput()
	if m := regexp.MustCompile(re).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "(unknown version)"
}

// ErrExitedStarting: the server exited before it served.
var ErrExitedStarting = errors.New("exited while starting")

// ReadyOnFreePort waits for a server that start put on a free port it
// chose. A free port is free only until someone binds it, and a JVM
// takes a second to: when serving says the server exited while starting
// (ErrExitedStarting) and *picked says start chose its port, elsewhere
// runs the server again on another, up to 3 times in all.
func ReadyOnFreePort(ctx context.Context, lg *Logger, name string, picked *bool, addr func() string,
	serving, elsewhere func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := serving(ctx)
		if !errors.Is(err, ErrExitedStarting) || !*picked || attempt == 3 {
			return err
		}
		lg.Printf("%s: exited while starting on %s (its port taken?); starting it again on another", name, addr())
		if err := elsewhere(ctx); err != nil {
			return err
		}
	}
}
