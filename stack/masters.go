package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMasters is how many Redlock masters a stack starts when
// Config.Masters is 0: five, so that the redlock rung survives two lost.
const DefaultMasters = 5

// MastersEnv is the environment variable that carries the Redlock masters
// to every instance, as a comma-separated list of addresses (the same list
// as its -masters flag).
const MastersEnv = "REDLOCK_MASTERS"

// master is one Redlock master: an independent Redis with a fixed address
// for the stack's life. r is nil while it is stopped (StopMaster).
type master struct {
	addr string
	r    *Redis
}

// masterMode is the masters' mode: the main Redis's, Real or Embedded.
func (s *Stack) masterMode() Mode {
	if s.redis.Embedded() {
		return Embedded
	}
	return Real
}

// startMasters starts the Redlock masters, all at once, each a Redis of
// its own on a free port of the main Redis's host, in the main Redis's
// mode. The masters started are kept even when another fails, so that
// Stop stops them.
func (s *Stack) startMasters(ctx context.Context) error {
	n := s.cfg.Masters
	if n <= 0 {
		return nil
	}
	mode := s.masterMode()
	host, _, _ := net.SplitHostPort(s.cfg.RedisAddr)
	addrs := make([]string, n)
	if mode == Real {
		// Reserve every port at once so that no two masters get the same.
		ports, err := freePorts(host, n)
		if err != nil {
			return err
		}
		for i, p := range ports {
			addrs[i] = net.JoinHostPort(host, p)
		}
	} else {
		for i := range addrs {
			addrs[i] = net.JoinHostPort(host, "0") // miniredis binds it itself
		}
	}
	rs := make([]*Redis, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Quiet: one summary line for all of them below.
			rs[i], errs[i] = startRedis(ctx, addrs[i], mode, s.cfg.RequireReal, s.dir, &logger{})
			if errs[i] != nil {
				errs[i] = fmt.Errorf("stack: redlock master %d: %w", i, errs[i])
			}
		})
	}
	wg.Wait()
	s.mastersMu.Lock()
	defer s.mastersMu.Unlock()
	for _, r := range rs {
		if r != nil {
			s.masters = append(s.masters, &master{addr: r.Addr(), r: r})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.lg.printf("%s", s.mastersSummaryLocked())
	return nil
}

// MasterAddrs are the host:port addresses of the Redlock masters, in the
// order the instances get them (-masters), stopped ones included; none
// when Config.Masters is negative.
func (s *Stack) MasterAddrs() []string {
	s.mastersMu.Lock()
	defer s.mastersMu.Unlock()
	return s.masterAddrsLocked()
}

func (s *Stack) masterAddrsLocked() []string {
	addrs := make([]string, len(s.masters))
	for i, m := range s.masters {
		addrs[i] = m.addr
	}
	return addrs
}

func (s *Stack) masterLocked(i int) (*master, error) {
	if i < 0 || i >= len(s.masters) {
		return nil, fmt.Errorf("stack: no redlock master %d (the stack has %d)", i, len(s.masters))
	}
	return s.masters[i], nil
}

// StopMaster stops Redlock master i (0-based, as in MasterAddrs): a
// redis-server by its pid (SIGTERM), an embedded miniredis by closing it
// and every connection to it. Its address then refuses connections, so
// the instances see errors from it: the masters-down scenario. Stopping a
// stopped master does nothing.
func (s *Stack) StopMaster(i int) error {
	s.mastersMu.Lock()
	defer s.mastersMu.Unlock()
	m, err := s.masterLocked(i)
	if err != nil {
		return err
	}
	if m.r == nil {
		return nil
	}
	r := m.r
	m.r = nil
	pid := r.Pid()
	if err := r.Stop(); err != nil {
		return fmt.Errorf("stack: redlock master %d on %s: %w", i, m.addr, err)
	}
	if pid != 0 {
		s.lg.printf("masters: %d on %s stopped (pid %d)", i, m.addr, pid)
	} else {
		s.lg.printf("masters: %d on %s stopped", i, m.addr)
	}
	return nil
}

// StartMaster brings stopped Redlock master i back on the same address,
// empty (nothing is persisted), and returns once it answers PING. Starting
// a running master does nothing; after Stop it is an error.
func (s *Stack) StartMaster(i int) error {
	s.mastersMu.Lock()
	defer s.mastersMu.Unlock()
	if s.life.Err() != nil {
		return errors.New("stack: StartMaster: the stack is stopped")
	}
	m, err := s.masterLocked(i)
	if err != nil {
		return err
	}
	if m.r != nil {
		return nil
	}
	// Bounded by Stop too: it cancels s.life.
	ctx, cancel := context.WithTimeout(s.life, 15*time.Second)
	defer cancel()
	r, err := startRedis(ctx, m.addr, s.masterMode(), s.cfg.RequireReal, s.dir, &logger{})
	if err != nil {
		return fmt.Errorf("stack: redlock master %d: %w", i, err)
	}
	m.r = r
	if pid := r.Pid(); pid != 0 {
		s.lg.printf("masters: %d on %s started again, empty (pid %d)", i, m.addr, pid)
	} else {
		s.lg.printf("masters: %d on %s started again, empty", i, m.addr)
	}
	return nil
}

// masterPidsLocked lists the pids of the running redis-server masters.
func (s *Stack) masterPidsLocked() []int {
	var pids []int
	for _, m := range s.masters {
		if m.r != nil && m.r.Pid() != 0 {
			pids = append(pids, m.r.Pid())
		}
	}
	return pids
}

// mastersSummaryLocked is the masters' Summary line, "" when there are none:
// "masters: 5 x redis-server 7.0.15 on ADDR,... (pids P,...)", with the
// stopped ones named. The masters run what the main Redis runs, so its
// kind and version are theirs.
func (s *Stack) mastersSummaryLocked() string {
	if len(s.masters) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "masters: %d x %s on %s (", len(s.masters), s.redis.kind(), strings.Join(s.masterAddrsLocked(), ","))
	if !s.redis.Embedded() {
		pids := make([]string, len(s.masters))
		for i, m := range s.masters {
			pids[i] = "-"
			if m.r != nil {
				pids[i] = strconv.Itoa(m.r.Pid())
			}
		}
		fmt.Fprintf(&b, "pids %s", strings.Join(pids, ","))
	} else {
		b.WriteString("in this process")
	}
	var down []string
	for _, m := range s.masters {
		if m.r == nil {
			down = append(down, m.addr)
		}
	}
	if len(down) > 0 {
		fmt.Fprintf(&b, "; stopped: %s", strings.Join(down, ","))
	}
	b.WriteString(")")
	return b.String()
}

// stopMasters stops every running master, all at once.
func (s *Stack) stopMasters() error {
	s.mastersMu.Lock()
	defer s.mastersMu.Unlock()
	errs := make([]error, len(s.masters))
	var wg sync.WaitGroup
	for i, m := range s.masters {
		if r := m.r; r != nil {
			wg.Go(func() { errs[i] = r.Stop() })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// instanceEnv is the environment of every instance: this process's, with
// MastersEnv set to the masters (or removed when there are none, so that
// a value from the caller's shell never leaks in).
func instanceEnv(masters []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, MastersEnv+"=") {
			env = append(env, kv)
		}
	}
	if len(masters) > 0 {
		env = append(env, MastersEnv+"="+strings.Join(masters, ","))
	}
	return env
}
