package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
)

// instance is one app process (Config.AppBinary) that the stack
// supervises: started with the same flags and environment every time,
// restarted when it exits while the stack is up (supervise), ready once
// GET /healthz answers 200.
type instance struct {
	name, addr string
	bin, dir   string
	args, env  []string // the same on every restart
	logPath    string

	mu      sync.Mutex
	p       *proc.Proc
	started time.Time

	// drainPid is the pid Drain sent SIGTERM to: when that process exits,
	// the supervisor logs it as drained, not as a crash, and restarts it
	// at once. The supervisor clears it.
	drainPid atomic.Int64
	draining sync.Mutex // one Drain at a time per instance
}

// start starts a new process for the instance; it becomes current.
func (in *instance) Start(context.Context) error {
	p, err := proc.Start(in.name, in.bin, in.args, in.env, in.dir, in.logPath)
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.p, in.started = p, time.Now()
	in.mu.Unlock()
	return nil
}

// ready waits until the current process answers GET /healthz with 200.
func (in *instance) Ready(ctx context.Context) error {
	if err := lb.WaitHealthy(ctx, "http://"+in.addr, in.current().Done()); err != nil {
		return fmt.Errorf("stack: %s on %s: %w%s", in.name, in.addr, err, proc.LogTail(in.logPath, 2048))
	}
	return nil
}

// stop stops the current process, if any.
func (in *instance) Stop() error {
	if p := in.current(); p != nil {
		return p.Stop(proc.StopGrace)
	}
	return nil
}

func (in *instance) current() *proc.Proc {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.p
}

// startInstances starts every app process and waits until each is healthy.
func (s *Stack) startInstances(ctx context.Context) error {
	ports := s.appPorts
	if ports == nil {
		// All at once, as for the masters: no two instances get one port.
		var err error
		if ports, err = proc.FreePorts("127.0.0.1", s.cfg.Instances); err != nil {
			return err
		}
	}
	masters := s.MasterAddrs()
	if len(s.masterProxies) > 0 {
		for i, p := range s.masterProxies {
			masters[i] = p.Addr()
		}
	}
	var redisFlag []string
	switch {
	case s.cluster != nil:
		redisFlag = []string{"-redis-cluster", strings.Join(s.cluster.Addrs(), ",")}
	case s.redisProxy != nil:
		redisFlag = []string{"-redis", s.redisProxy.Addr()}
	default:
		redisFlag = []string{"-redis", s.redis.Addr()}
	}
	var mastersFlag []string
	if len(masters) > 0 {
		mastersFlag = []string{"-masters", strings.Join(masters, ",")}
	}
	env, procs, debug := instanceEnv(masters, len(ports))
	env = append(env, s.backendEnv()...)
	env = append(env, FaultKeyEnv+"="+s.faultKey, RedisPasswordEnv+"="+s.redisPass)
	var all proc.Group
	for i, port := range ports {
		name := fmt.Sprintf("app%d", i+1)
		in := &instance{
			name:    name,
			addr:    net.JoinHostPort("127.0.0.1", port),
			bin:     s.cfg.AppBinary,
			dir:     s.dir,
			logPath: filepath.Join(s.dir, name+".log"),
			env:     env,
		}
		// Ours first: a flag repeated in AppArgs or InstanceArgs wins.
		// Its critical sections in a file of the run dir, which outlives
		// its crashes (contract.OpenRecorder).
		in.args = append([]string{"-addr", in.addr, "-name", name, "-sections", filepath.Join(s.dir, name+".sections")}, redisFlag...)
		in.args = append(in.args, mastersFlag...)
		in.args = append(in.args, s.backendFlags()...)
		in.args = append(in.args, s.cfg.AppArgs...)
		in.args = append(in.args, s.cfg.InstanceArgs[i]...)
		s.instances = append(s.instances, in)
		all = append(all, in)
	}
	if err := s.up(ctx, all); err != nil {
		return err
	}
	s.lbDown = make([]bool, len(s.instances))
	for _, in := range s.instances {
		s.lg.Printf("%s", s.instanceSummary(in))
	}
	if procs != "" {
		s.lg.Printf("apps: GOMAXPROCS=%s each, %d cores shared by %d instances (set GOMAXPROCS to choose)", procs, runtime.NumCPU(), len(ports))
	}
	if strings.Contains(debug, AwakeMonitor) {
		s.lg.Printf("apps: GODEBUG=%s: the Go runtime's monitor thread stays awake instead of being woken after every idle moment (set GODEBUG=schedtrace=0 to choose)", AwakeMonitor)
	}
	return nil
}

// instanceEnv is the environment of every instance: this process's, with
// MastersEnv set to the masters (or removed when there are none, so that
// a value from the caller's shell never leaks in), the back ends'
// variables (backends.MySQLEnv, PostgresEnv, ZooKeeperEnv, EtcdEnv)
// removed (the stack's servers, if it runs them, set them) and FaultKeyEnv removed
// (the stack sets its own), and, unless the caller
// set GOMAXPROCS, the machine's cores shared among the n instances (at
// least one each), which it returns too ("" when the caller's stands);
// and GODEBUG with AwakeMonitor added, unless the caller's already names
// schedtrace, which it returns too.
//
// Go gives each process as many scheduler threads as the machine has
// cores. Three instances of two threads each on two cores, beside Redis,
// nginx and the load, hand goroutines between threads that then wait for
// a core: every lock that is a chain of round trips pays that on every
// hop. One thread per instance on a 2-core machine used less CPU in the
// apps and ran the demo faster (MEASUREMENTS.md).
func instanceEnv(masters []string, n int) (env []string, procs, debug string) {
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, MastersEnv+"="), strings.HasPrefix(kv, backends.MySQLEnv+"="), strings.HasPrefix(kv, FaultKeyEnv+"="),
			strings.HasPrefix(kv, RedisPasswordEnv+"="),
			strings.HasPrefix(kv, backends.PostgresEnv+"="),
			strings.HasPrefix(kv, backends.ZooKeeperEnv+"="), strings.HasPrefix(kv, backends.EtcdEnv+"="):
		case strings.HasPrefix(kv, "GODEBUG="):
			debug = strings.TrimPrefix(kv, "GODEBUG=")
		default:
			env = append(env, kv)
		}
	}
	if len(masters) > 0 {
		env = append(env, MastersEnv+"="+strings.Join(masters, ","))
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		procs = strconv.Itoa(max(1, runtime.NumCPU()/max(n, 1)))
		env = append(env, "GOMAXPROCS="+procs)
	}
	debug, _ = WithAwakeMonitor(debug)
	return append(env, "GODEBUG="+debug), procs, debug
}

// AwakeMonitor is the GODEBUG setting the instances and the process that
// sends the load run with: the Go runtime's scheduler trace, every 24.8
// days (the longest it takes; a line at start only on a machine up that
// long), for its side effect: the runtime's monitor thread (sysmon) never
// parks.
//
// Without it, sysmon parks whenever every scheduler thread is idle, and
// the next system call wakes it (a futex, on the request's path), after
// which it polls every 20 µs for a while. A process with one thread that
// waits on the network several times per request goes idle and back
// thousands of times a second: on a VM where every system call and
// thread switch is dear, sysmon then takes a large share of the apps'
// CPU. Awake, it sleeps up to 10 ms at a time when there is nothing to
// do. With it, the apps and the load's process used less CPU, and the
// locks and the atomic sale ran faster (MEASUREMENTS.md;
// golang/go#18236 is about the monitor's tick).
const AwakeMonitor = "schedtrace=2147483647"

// WithAwakeMonitor returns the GODEBUG value debug with AwakeMonitor
// added, and true; or debug as it is, and false, when it already names
// schedtrace (the caller chose).
func WithAwakeMonitor(debug string) (string, bool) {
	if strings.Contains(debug, "schedtrace=") {
		return debug, false
	}
	return strings.TrimPrefix(debug+","+AwakeMonitor, ","), true
}

// instanceSummary is in's Summary line, with its current pid.
func (s *Stack) instanceSummary(in *instance) string {
	return fmt.Sprintf("%s: %s on %s (pid %d, log %s)", in.name, s.cfg.AppBinary, in.addr, in.current().Pid(), in.logPath)
}

// supervise restarts in whenever its process exits while the stack is up,
// with a backoff that grows while it keeps crashing early. An exit Drain
// asked for is no crash: it is logged as drained and restarted at once.
func (s *Stack) supervise(in *instance) {
	defer s.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		p := in.current()
		select {
		case <-s.life.Done():
			return
		case <-p.Done():
		}
		if s.life.Err() != nil { // stopping: not a crash
			return
		}
		drained := in.drainPid.CompareAndSwap(int64(p.Pid()), 0)
		wait := backoff
		if drained {
			wait = 0
			n := s.drains.Add(1)
			s.lg.Printf("%s: pid %d drained (%v); restarting (drain #%d)", in.name, p.Pid(), p.ExitErr(), n)
		} else {
			n := s.restarts.Add(1)
			if time.Since(in.started) > s.cfg.StableAfter {
				backoff = 100 * time.Millisecond
			}
			wait = backoff
			s.lg.Printf("%s: pid %d exited unexpectedly (%v); restarting in %s (restart #%d)", in.name, p.Pid(), p.ExitErr(), backoff, n)
		}
		for {
			select {
			case <-s.life.Done():
				return
			case <-time.After(wait):
			}
			if wait > 0 {
				backoff = min(2*backoff, 5*time.Second)
			}
			wait = backoff
			if err := in.Start(s.life); err != nil {
				s.lg.Printf("%s: restart failed: %v; retrying in %s", in.name, err, backoff)
				continue
			}
			s.lg.Printf("%s: restarted as pid %d", in.name, in.current().Pid())
			break
		}
		// Say when it is serving again; if it dies first the loop above sees it.
		ctx, cancel := context.WithTimeout(s.life, 30*time.Second)
		if in.Ready(ctx) == nil {
			s.lg.Printf("%s: healthy again (pid %d)", in.name, in.current().Pid())
		}
		cancel()
	}
}
