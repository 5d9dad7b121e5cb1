package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/faultproxy"
	"github.com/lockladder/lockladder/stack/proc"
)

// This file holds what a test or a scenario does to a running stack:
// faults on the network (the fault proxies), Redis or a master stopped
// and brought back, a signal to an instance. The graceful way to take an
// instance out under load is Drain (drain.go).

// startFaultProxies starts the proxies Config asks for, in front of the
// main Redis and of each master, before the instances that dial them.
func (s *Stack) startFaultProxies(ctx context.Context) error {
	var all proc.Group
	if s.cfg.RedisProxy {
		p, err := faultproxy.Prepare(s.redis.Addr())
		if err != nil {
			return err
		}
		s.redisProxy = p
		all = append(all, p)
	}
	if s.cfg.MasterProxies {
		for _, a := range s.MasterAddrs() {
			p, err := faultproxy.Prepare(a)
			if err != nil {
				return err
			}
			s.masterProxies = append(s.masterProxies, p)
			all = append(all, p)
		}
	}
	if len(all) == 0 {
		return nil
	}
	if err := s.up(ctx, all); err != nil {
		return err
	}
	if l := s.faultProxiesSummary(); l != "" {
		s.lg.Printf("%s", l)
	}
	return nil
}

// faultProxiesSummary is the fault proxies' Summary line, "" when none.
func (s *Stack) faultProxiesSummary() string {
	var parts []string
	if p := s.redisProxy; p != nil {
		parts = append(parts, fmt.Sprintf("redis via %s -> %s", p.Addr(), p.Upstream()))
	}
	if len(s.masterProxies) > 0 {
		ms := make([]string, len(s.masterProxies))
		for i, p := range s.masterProxies {
			ms[i] = p.Addr() + " -> " + p.Upstream()
		}
		parts = append(parts, "masters via "+strings.Join(ms, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "fault proxies (in this process): " + strings.Join(parts, "; ")
}

// RedisProxy is the FaultProxy the instances reach the main Redis through
// (Config.RedisProxy), nil when there is none.
func (s *Stack) RedisProxy() *faultproxy.Proxy { return s.redisProxy }

// MasterProxy is the FaultProxy the instances reach Redlock master i
// (0-based, as in MasterAddrs) through (Config.MasterProxies); nil when
// there is none.
func (s *Stack) MasterProxy(i int) *faultproxy.Proxy {
	if i < 0 || i >= len(s.masterProxies) {
		return nil
	}
	return s.masterProxies[i]
}

// opCtx bounds an operation on the stack: ctx with a default timeout d,
// also cancelled by Stop.
func (s *Stack) opCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := proc.WithDefaultTimeout(ctx, d)
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// StopRedis stops the main Redis mid-run, keeping its data for StartRedis:
// a redis-server gets SHUTDOWN SAVE (it writes its dataset to its dump file
// in the run dir, then exits), an embedded miniredis is closed, its data
// staying in this process. Its address then refuses connections and the
// instances answer 503. Stopping it again does nothing.
func (s *Stack) StopRedis(ctx context.Context) error {
	if s.life.Err() != nil {
		return errors.New("stack: StopRedis: the stack is stopped")
	}
	if s.redis == nil {
		return errors.New("stack: StopRedis: the stack runs a Redis Cluster, not one Redis")
	}
	ctx, cancel := s.opCtx(ctx, 15*time.Second)
	defer cancel()
	if s.redis.Down() {
		return nil
	}
	pid := s.redis.Pid()
	if err := s.redis.Shutdown(ctx); err != nil {
		return err
	}
	if s.redis.Embedded() {
		s.lg.Printf("redis: %s on %s stopped (its data kept in this process)", s.redis.Kind(), s.redis.Addr())
	} else {
		s.lg.Printf("redis: pid %d on %s stopped by SHUTDOWN SAVE (dump %s)", pid, s.redis.Addr(), s.redis.DumpPath())
	}
	return nil
}

// StartRedis brings the main Redis that StopRedis stopped back on the same
// address with its data (a redis-server loads its dump; it is checked to
// be the new process, as at Start) and returns once it answers PING.
// Starting it while it runs does nothing. The instances reconnect on their
// next calls.
func (s *Stack) StartRedis(ctx context.Context) error {
	if s.life.Err() != nil {
		return errors.New("stack: StartRedis: the stack is stopped")
	}
	if s.redis == nil {
		return errors.New("stack: StartRedis: the stack runs a Redis Cluster, not one Redis")
	}
	ctx, cancel := s.opCtx(ctx, 15*time.Second)
	defer cancel()
	if !s.redis.Down() {
		return nil
	}
	if err := s.redis.Restart(ctx); err != nil {
		return err
	}
	if pid := s.redis.Pid(); pid != 0 {
		s.lg.Printf("redis: started again on %s with its data (pid %d)", s.redis.Addr(), pid)
	} else {
		s.lg.Printf("redis: started again on %s with its data (%s, in this process)", s.redis.Addr(), s.redis.Kind())
	}
	return nil
}

// StopMaster stops Redlock master i (0-based, as in MasterAddrs): a
// redis-server by its pid (SIGTERM), an embedded miniredis by closing it
// and every connection to it. Its address then refuses connections, so
// the instances see errors from it: the masters-down scenario. Stopping a
// stopped master does nothing.
func (s *Stack) StopMaster(i int) error { return s.masters.StopOne(i) }

// StartMaster brings stopped Redlock master i back on the same address,
// empty (nothing is persisted), and returns once it answers PING. Starting
// a running master does nothing; after Stop it is an error.
func (s *Stack) StartMaster(i int) error {
	return s.bounded("StartMaster", func(ctx context.Context) error { return s.masters.StartOne(ctx, i) })
}

// CrashMaster SIGKILLs Redlock master i (0-based, as in MasterAddrs): no
// shutdown, no save; the locks it granted survive only in its append-only
// file (Config.MastersAOF). It stays down until RestartMaster. Needs
// redis-server.
func (s *Stack) CrashMaster(i int) error { return s.masters.CrashOne(i) }

// RestartMaster brings crashed Redlock master i back on the same address
// with what it persisted (Config.MastersAOF), else empty, and returns once
// it answers PING. Restarting a running master does nothing.
func (s *Stack) RestartMaster(i int) error {
	return s.bounded("RestartMaster", func(ctx context.Context) error { return s.masters.RestartOne(ctx, i) })
}

// bounded runs op, named in errors, within 15s and until Stop (which
// cancels s.life); after Stop it is an error.
func (s *Stack) bounded(name string, op func(context.Context) error) error {
	if s.life.Err() != nil {
		return fmt.Errorf("stack: %s: the stack is stopped", name)
	}
	ctx, cancel := context.WithTimeout(s.life, 15*time.Second)
	defer cancel()
	return op(ctx)
}

// instance returns instance i (0-based).
func (s *Stack) instance(i int) (*instance, error) {
	if i < 0 || i >= len(s.instances) {
		return nil, fmt.Errorf("stack: no instance %d (the stack has %d)", i, len(s.instances))
	}
	return s.instances[i], nil
}

// Signal sends sig to instance i's current process (0-based) and returns
// its pid. The supervisor treats any exit that follows as a crash: after
// SIGKILL it restarts the instance (Restarts counts it). To take an
// instance out without losing requests, use Drain, not SIGTERM.
func (s *Stack) Signal(i int, sig syscall.Signal) (pid int, err error) {
	in, err := s.instance(i)
	if err != nil {
		return 0, err
	}
	p := in.current()
	// Process.Signal, not kill(2) by number: it never signals a reaped
	// process whose pid was reused.
	if err := p.Process().Signal(sig); err != nil {
		return p.Pid(), fmt.Errorf("stack: %s (pid %d): %v: %w", in.name, p.Pid(), sig, err)
	}
	return p.Pid(), nil
}
