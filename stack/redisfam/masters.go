package redisfam

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/lockladder/lockladder/stack/proc"
)

// Masters are the Redlock masters: independent Redis servers, launched
// together on free ports of the main Redis's host, in the main Redis's
// mode (redis-server or miniredis). Each keeps its address for the
// stack's life: StopOne and StartOne (the stack's StopMaster and
// StartMaster) stop one and bring it back there, empty; CrashOne and
// RestartOne kill one and bring it back with what it persisted (aof), or
// empty.
type Masters struct {
	host        string
	mode        proc.Mode // Real or Embedded, as the main Redis
	kind        string    // the main Redis's kind, theirs too
	requireReal bool
	aof         bool   // an append-only file each (the stack's Config.MastersAOF)
	password    string // required of their clients: the stack's
	dir         string
	lg          *proc.Logger

	mu     sync.Mutex // guards ms, each master's r, and closed
	ms     []*master
	closed bool // Stop ran: StartOne starts none
}

// master is one Redlock master. r is nil while it is stopped
// (StopOne).
type master struct {
	addr string
	r    *Server
}

// NewMasters describes n masters (none when n <= 0) on redisAddr's host,
// run as the main Redis is: embedded or not, of kind, requiring password
// of their clients.
func NewMasters(n int, embedded bool, kind, redisAddr string, requireReal, aof bool, dir, password string, lg *proc.Logger) *Masters {
	host, _, _ := net.SplitHostPort(redisAddr)
	m := &Masters{host: host, mode: proc.Real, kind: kind, requireReal: requireReal, aof: aof, password: password, dir: dir, lg: lg}
	if embedded {
		m.mode = proc.Embedded
	}
	for range max(n, 0) {
		m.ms = append(m.ms, &master{})
	}
	return m
}

// Start starts every master at once.
func (m *Masters) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.aof && m.mode != proc.Real && len(m.ms) > 0 {
		return errors.New("stack: redlock masters with an append-only file (MastersAOF) need redis-server: miniredis persists nothing")
	}
	addrs := make([]string, len(m.ms))
	if m.mode == proc.Real {
		// Reserve every port at once so that no two masters get the same.
		ports, err := proc.FreePorts(m.host, len(m.ms))
		if err != nil {
			return err
		}
		for i, p := range ports {
			addrs[i] = net.JoinHostPort(m.host, p)
		}
	} else {
		for i := range addrs {
			addrs[i] = net.JoinHostPort(m.host, "0") // miniredis binds it itself
		}
	}
	return proc.Each(len(m.ms), func(i int) error {
		// Quiet: one summary line for all of them (summary).
		r, err := NewServer(addrs[i], m.mode, m.requireReal, m.masterDir(i), m.password, proc.NewLogger(nil))
		if err == nil {
			m.ms[i].r = r
			err = r.Start(ctx)
		}
		if err != nil {
			return fmt.Errorf("stack: redlock master %d: %w", i, err)
		}
		return nil
	})
}

// Ready waits until every master answers; each keeps the address it
// answers on.
func (m *Masters) Ready(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return proc.Each(len(m.ms), func(i int) error {
		r := m.ms[i].r
		if err := r.Ready(ctx); err != nil {
			return fmt.Errorf("stack: redlock master %d: %w", i, err)
		}
		if m.aof {
			if err := r.Persist(ctx); err != nil {
				return fmt.Errorf("stack: redlock master %d: %w", i, err)
			}
		}
		m.ms[i].addr = r.Addr()
		return nil
	})
}

// masterDir is where master i keeps its files: the run dir, or with an
// append-only file a directory of its own in it (Redis names that file's
// directory the same for every server in one dir). "" (no run dir): a
// temp dir of its own.
func (m *Masters) masterDir(i int) string {
	if !m.aof || m.dir == "" {
		return m.dir
	}
	d := filepath.Join(m.dir, fmt.Sprintf("master-%d", i))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "" // a temp dir of its own: as good, only harder to find
	}
	return d
}

// Stop stops every running master, all at once.
func (m *Masters) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return proc.Each(len(m.ms), func(i int) error {
		if r := m.ms[i].r; r != nil {
			return r.Stop()
		}
		return nil
	})
}

// Addrs are the masters' addresses, stopped ones included.
func (m *Masters) Addrs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addrsLocked()
}

func (m *Masters) addrsLocked() []string {
	addrs := make([]string, len(m.ms))
	for i, ms := range m.ms {
		addrs[i] = ms.addr
	}
	return addrs
}

func (m *Masters) masterLocked(i int) (*master, error) {
	if i < 0 || i >= len(m.ms) {
		return nil, fmt.Errorf("stack: no redlock master %d (the stack has %d)", i, len(m.ms))
	}
	return m.ms[i], nil
}

// StopOne stops master i; stopping a stopped master does nothing.
func (m *Masters) StopOne(i int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, err := m.masterLocked(i)
	if err != nil {
		return err
	}
	if ms.r == nil {
		return nil
	}
	r := ms.r
	ms.r = nil
	pid := r.Pid()
	if err := r.Stop(); err != nil {
		return fmt.Errorf("stack: redlock master %d on %s: %w", i, ms.addr, err)
	}
	if pid != 0 {
		m.lg.Printf("masters: %d on %s stopped (pid %d)", i, ms.addr, pid)
	} else {
		m.lg.Printf("masters: %d on %s stopped", i, ms.addr)
	}
	return nil
}

// StartOne starts stopped master i again on its address, empty; starting
// a running master does nothing, and after stop it is an error.
func (m *Masters) StartOne(ctx context.Context, i int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("stack: StartMaster: the stack is stopped")
	}
	ms, err := m.masterLocked(i)
	if err != nil {
		return err
	}
	if ms.r != nil {
		return nil
	}
	r, err := LaunchServer(ctx, ms.addr, m.mode, m.requireReal, m.dir, m.password, proc.NewLogger(nil))
	if err != nil {
		return fmt.Errorf("stack: redlock master %d: %w", i, err)
	}
	ms.r = r
	if pid := r.Pid(); pid != 0 {
		m.lg.Printf("masters: %d on %s started again, empty (pid %d)", i, ms.addr, pid)
	} else {
		m.lg.Printf("masters: %d on %s started again, empty", i, ms.addr)
	}
	return nil
}

// CrashOne SIGKILLs master i: no shutdown, no save. It stays down, on
// its address, until RestartOne.
func (m *Masters) CrashOne(i int) error {
	ms, r, err := m.started(i, "CrashMaster")
	if err != nil {
		return err
	}
	pid := r.Pid()
	if err := r.Crash(); err != nil {
		return fmt.Errorf("stack: redlock master %d on %s: %w", i, ms.addr, err)
	}
	m.lg.Printf("masters: %d on %s crashed (SIGKILL, pid %d)", i, ms.addr, pid)
	return nil
}

// RestartOne brings crashed master i back on its address with what it
// persisted: its append-only file (aof), else nothing.
// Restarting a running master does nothing.
func (m *Masters) RestartOne(ctx context.Context, i int) error {
	ms, r, err := m.started(i, "RestartMaster")
	if err != nil {
		return err
	}
	if !r.Down() {
		return nil
	}
	// A Stop meanwhile makes Restart fail (the Redis is stopped).
	if err := r.Restart(ctx); err != nil {
		return fmt.Errorf("stack: redlock master %d on %s: %w", i, ms.addr, err)
	}
	with := "empty"
	if m.aof {
		with = "with its append-only file"
	}
	m.lg.Printf("masters: %d on %s restarted, %s (pid %d)", i, ms.addr, with, r.Pid())
	return nil
}

// started returns master i and its server, which StopOne has not
// stopped (it may have crashed), for an operation (op, in errors) that
// runs outside m.mu, so that several masters crash or restart at once.
func (m *Masters) started(i int, op string) (*master, *Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, fmt.Errorf("stack: %s: the stack is stopped", op)
	}
	ms, err := m.masterLocked(i)
	if err != nil {
		return nil, nil, err
	}
	if ms.r == nil {
		return nil, nil, fmt.Errorf("stack: %s: redlock master %d on %s is stopped (StartMaster starts it)", op, i, ms.addr)
	}
	return ms, ms.r, nil
}

// Pids lists the pids of the running redis-server masters.
func (m *Masters) Pids() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var pids []int
	for _, ms := range m.ms {
		if ms.r != nil && ms.r.Pid() != 0 {
			pids = append(pids, ms.r.Pid())
		}
	}
	return pids
}

// Summary is the masters' line in a stack's Summary, "" when there are none:
// "masters: 5 x redis-server 7.0.15 on ADDR,... (pids P,...)", with the
// stopped ones named.
func (m *Masters) Summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ms) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "masters: %d x %s on %s (", len(m.ms), m.kind, strings.Join(m.addrsLocked(), ","))
	if m.mode == proc.Real {
		pids := make([]string, len(m.ms))
		for i, ms := range m.ms {
			pids[i] = "-"
			if ms.r != nil {
				pids[i] = strconv.Itoa(ms.r.Pid())
			}
		}
		fmt.Fprintf(&b, "pids %s", strings.Join(pids, ","))
	} else {
		b.WriteString("in this process")
	}
	var down []string
	for _, ms := range m.ms {
		if ms.r == nil {
			down = append(down, ms.addr)
		}
	}
	if len(down) > 0 {
		fmt.Fprintf(&b, "; stopped: %s", strings.Join(down, ","))
	}
	b.WriteString(")")
	return b.String()
}
