package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// expireTick is how often an embedded miniredis is fast-forwarded to the
// wall clock, so keys with a TTL expire in real time (miniredis alone only
// expires keys when told to).
const expireTick = 10 * time.Millisecond

// Redis is one Redis server on loopback: a real redis-server process or an
// embedded miniredis served over TCP from this process.
type Redis struct {
	addr    string
	version string

	// real
	bin   string
	dir   string
	rmDir bool
	proc  *proc // the current redis-server: a new one after restart (guarded by mu)

	// embedded
	mini     *miniredis.Miniredis
	stopTick chan struct{}
	tickDone chan struct{}

	mu   sync.Mutex // guards proc and down
	down bool       // shut down by shutdown, not yet restarted

	opMu    sync.Mutex // serialises shutdown, restart and Stop
	stopped bool       // Stop ran (guarded by opMu)

	stopOnce sync.Once
	stopErr  error
}

// StartRedis starts a standalone Redis on addr ("" or port 0: a free
// port; no host: 127.0.0.1) and returns once it answers PING. Real runs redis-server
// with nothing persisted (no save points, no AOF; a dump left by an
// earlier run in its dir is removed first), in a temp dir removed by Stop; Embedded serves
// miniredis from this process; Auto picks redis-server when it is on PATH
// and otherwise falls back to miniredis, unless requireReal is set, in
// which case a missing redis-server is an error. Progress lines go to log
// (nil: discarded).
func StartRedis(ctx context.Context, addr string, mode Mode, requireReal bool, log io.Writer) (*Redis, error) {
	addr, err := loopback(addr, "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stack: redis address: %w", err)
	}
	return startRedis(ctx, addr, mode, requireReal, "", &logger{w: log})
}

// startRedis is StartRedis with a run dir ("" = a temp dir of its own);
// addr has a host already (loopback).
func startRedis(ctx context.Context, addr string, mode Mode, requireReal bool, dir string, lg *logger) (*Redis, error) {
	real, bin, err := resolveMode(mode, "redis-server", requireReal)
	if err != nil {
		return nil, fmt.Errorf("stack: redis: %w", err)
	}
	if !real {
		if mode != Embedded {
			lg.printf("redis-server not found on PATH: using embedded miniredis (Redis-compatible, in this process)")
		}
		return startMiniredis(addr, lg)
	}
	return startRedisServer(ctx, bin, addr, dir, lg)
}

func startMiniredis(addr string, lg *logger) (*Redis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("stack: embedded miniredis on %s: %w", addr, err)
	}
	installScripts(m)
	r := &Redis{
		addr:     m.Addr(),
		version:  moduleVersion("github.com/alicebob/miniredis/v2"),
		mini:     m,
		stopTick: make(chan struct{}),
		tickDone: make(chan struct{}),
	}
	go r.tick()
	lg.printf("%s", r.summary())
	return r, nil
}

// tick advances miniredis's clock with the wall clock.
func (r *Redis) tick() {
	defer close(r.tickDone)
	t := time.NewTicker(expireTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-r.stopTick:
			return
		case now := <-t.C:
			r.mini.FastForward(now.Sub(last))
			last = now
		}
	}
}

func startRedisServer(ctx context.Context, bin, addr, dir string, lg *logger) (*Redis, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("stack: redis address %q: %w", addr, err)
	}
	if port != "0" {
		return startRedisServerOn(ctx, bin, host, port, dir, lg)
	}
	// A free port is free only until someone binds it: another test
	// package starting its own Redis at the same moment may take it
	// first. Then ours cannot bind (errPortTaken), and we pick again.
	for attempt := 1; ; attempt++ {
		if port, err = freePort(host); err != nil {
			return nil, err
		}
		r, err := startRedisServerOn(ctx, bin, host, port, dir, lg)
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return r, err
		}
	}
}

// errPortTaken: the port answered, but not with our redis-server.
var errPortTaken = errors.New("port taken by another process")

func startRedisServerOn(ctx context.Context, bin, host, port, dir string, lg *logger) (_ *Redis, err error) {
	r := &Redis{addr: net.JoinHostPort(host, port), bin: bin, dir: dir}
	if dir == "" {
		if r.dir, err = os.MkdirTemp("", "lockladder-redis-"); err != nil {
			return nil, fmt.Errorf("stack: redis: %w", err)
		}
		r.rmDir = true
	}
	defer func() {
		if err != nil {
			r.Stop() // r, not the result: every failure returns a nil *Redis
		}
	}()
	r.version = binaryVersion(bin, `v=(\S+)`, "--version")
	// A fresh server starts empty: a dump an earlier run left here (its
	// StopRedis saved one) must not be loaded.
	if err := os.Remove(filepath.Join(r.dir, r.dbFilename())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("stack: redis: stale dump: %w", err)
	}
	if err := r.spawn(ctx); err != nil {
		return nil, err
	}
	lg.printf("%s", r.summary())
	return r, nil
}

// dbFilename is the server's dump file in its dir, named after its port:
// the main Redis and the masters share the stack's run dir, and a master
// started again must not load the main Redis's dump.
func (r *Redis) dbFilename() string {
	_, port, _ := net.SplitHostPort(r.addr)
	return "redis-" + port + ".rdb"
}

// spawn starts redis-server on r.addr and returns once that very process
// answers there (its process_id, not some other server's) and PING has its
// PONG (not LOADING: a restart loads the dump first). On failure the
// process it started is stopped.
func (r *Redis) spawn(ctx context.Context) (err error) {
	host, port, _ := net.SplitHostPort(r.addr)
	// Nothing persisted, nothing shared with a Redis the user runs: own
	// port, loopback only, own dir. The dump file is written only by
	// shutdown (SHUTDOWN SAVE) and read back by the restart, from the
	// same --dir and --dbfilename.
	args := []string{
		"--port", port, "--bind", host,
		"--save", "", "--appendonly", "no",
		"--daemonize", "no", "--dir", r.dir, "--dbfilename", r.dbFilename(),
		"--pidfile", filepath.Join(r.dir, "redis-"+port+".pid"),
	}
	p, err := startProc("redis-server", r.bin, args, nil, r.dir, filepath.Join(r.dir, "redis-"+port+".log"))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			p.stop(stopGrace)
		}
	}()
	ctx, cancel := withDefaultTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		if pid, err := serverPid(ctx, r.addr); err == nil {
			if pid != p.pid() {
				// Someone else's Redis answers there: ours will fail to bind.
				return fmt.Errorf("stack: redis-server on %s: %w (pid %d answers)", r.addr, errPortTaken, pid)
			}
			if redisPing(ctx, r.addr) == nil {
				break
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("stack: redis-server on %s exited: %v%s", r.addr, p.exitErr(), logTail(p.logPath, 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: redis-server on %s: no PONG: %w%s", r.addr, ctx.Err(), logTail(p.logPath, 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.mu.Lock()
	r.proc, r.down = p, false
	r.mu.Unlock()
	return nil
}

// shutdown stops the server keeping its data, for restart: redis-server
// by SHUTDOWN SAVE (its dataset written to its dump file, then it exits),
// miniredis by closing it (its data stays in this process). Shutting down
// a server already down does nothing.
func (r *Redis) shutdown(ctx context.Context) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if r.stopped {
		return errors.New("stack: redis: stopped")
	}
	r.mu.Lock()
	down, p := r.down, r.proc
	r.mu.Unlock()
	if down {
		return nil
	}
	if r.mini != nil {
		r.mini.Close() // the ticker keeps the clock: TTLs run out while it is down, as they would
		r.mu.Lock()
		r.down = true
		r.mu.Unlock()
		return nil
	}
	ctx, cancel := withDefaultTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := shutdownSave(ctx, r.addr); err != nil {
		return fmt.Errorf("stack: redis-server on %s (pid %d): SHUTDOWN SAVE: %w", r.addr, p.pid(), err)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("stack: redis-server on %s (pid %d) still runs after SHUTDOWN SAVE: %w", r.addr, p.pid(), ctx.Err())
	}
	// Whatever its exit, the process is gone: mark it down before looking.
	r.mu.Lock()
	r.down = true
	r.mu.Unlock()
	p.stop(stopGrace) // reaped already: only sweeps its process group
	if p.waitErr != nil {
		return fmt.Errorf("stack: redis-server on %s (pid %d) after SHUTDOWN SAVE: %v%s", r.addr, p.pid(), p.waitErr, logTail(p.logPath, 2048))
	}
	return nil
}

// restart brings a server that shutdown stopped back on its address with
// its data: redis-server from its dump (same --dir and --dbfilename),
// checked to be the new process as at the start; miniredis reopened on
// the same port. Restarting a running server does nothing.
func (r *Redis) restart(ctx context.Context) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if r.stopped {
		return errors.New("stack: redis: stopped")
	}
	r.mu.Lock()
	down := r.down
	r.mu.Unlock()
	if !down {
		return nil
	}
	if r.mini != nil {
		// Close cancelled miniredis's context (blocking commands watch
		// it); a reopened server needs a live one.
		r.mini.Lock()
		r.mini.Ctx, r.mini.CtxCancel = context.WithCancel(context.Background())
		r.mini.Unlock()
		if err := r.mini.StartAddr(r.addr); err != nil {
			return fmt.Errorf("stack: embedded miniredis on %s: restart: %w", r.addr, err)
		}
		installScripts(r.mini)
		r.mu.Lock()
		r.down = false
		r.mu.Unlock()
		return nil
	}
	return r.spawn(ctx)
}

// current is the server's current process, nil when embedded.
func (r *Redis) current() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc
}

// isDown reports whether shutdown stopped the server and restart has not
// brought it back.
func (r *Redis) isDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// Addr is the host:port the server listens on.
func (r *Redis) Addr() string { return r.addr }

// Embedded reports whether this is miniredis in this process.
func (r *Redis) Embedded() bool { return r.mini != nil }

// Pid is the redis-server process id, 0 when embedded or while a stack
// has it stopped (Stack.StopRedis); after a restart, the new process's.
func (r *Redis) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil || r.down {
		return 0
	}
	return r.proc.pid()
}

// kind names the server and its version, "redis-server VERSION" or
// "embedded miniredis VERSION", for the summary lines.
func (r *Redis) kind() string {
	if r.mini != nil {
		return "embedded miniredis " + r.version
	}
	return "redis-server " + r.version
}

func (r *Redis) summary() string {
	if r.isDown() {
		return fmt.Sprintf("redis: %s on %s (stopped; its data kept for a restart)", r.kind(), r.addr)
	}
	if r.mini != nil {
		return fmt.Sprintf("redis: %s on %s (in this process; TTLs advanced every %s)", r.kind(), r.addr, expireTick)
	}
	return fmt.Sprintf("redis: %s on %s (pid %d)", r.kind(), r.addr, r.Pid())
}

// Stop stops the server (SIGTERM, SIGKILL after a grace period) and waits
// for it; it is idempotent.
func (r *Redis) Stop() error {
	r.stopOnce.Do(func() {
		r.opMu.Lock()
		defer r.opMu.Unlock()
		r.stopped = true
		if r.mini != nil {
			close(r.stopTick)
			<-r.tickDone
			r.mini.Close()
		}
		if p := r.current(); p != nil {
			r.stopErr = p.stop(stopGrace)
		}
		if r.rmDir {
			r.stopErr = errors.Join(r.stopErr, os.RemoveAll(r.dir))
		}
	})
	return r.stopErr
}

// moduleVersion is the version of a module linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
