package redisfam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/lockladder/lockladder/stack/embedded"
	"github.com/lockladder/lockladder/stack/proc"
)

// Server is one Redis server on loopback: a real redis-server process
// (redisserver.go) or an embedded miniredis served over TCP from this
// process (package embedded). Both can be stopped keeping their data and
// brought back with it (Shutdown, Restart: the stack's StopRedis and StartRedis).
type Server struct {
	srv      redisKind
	password string // required of its clients: "" for none

	opMu    sync.Mutex // serialises shutdown, restart and Stop
	stopped bool       // Stop ran (guarded by opMu)

	stopOnce sync.Once
	stopErr  error
}

// redisKind is what each kind of Redis does beyond the server shape.
type redisKind interface {
	proc.Server
	Addr() string
	// pid is the server's process id, 0 when embedded or down.
	Pid() int
	// down reports whether shutdown stopped it and restart has not
	// brought it back.
	Down() bool
	// shutdown stops a running server keeping its data for restart.
	Shutdown(ctx context.Context) error
	// restart brings a server shutdown stopped back on its address with
	// its data.
	Restart(ctx context.Context) error
	// kind names it and its version: "redis-server VERSION" or
	// "embedded miniredis VERSION".
	Kind() string
}

// Start starts a standalone Redis on addr ("" or port 0: a free
// port; no host: 127.0.0.1) and returns once it answers PING. Real runs redis-server
// with nothing persisted (no save points, no AOF; a dump left by an
// earlier run in its dir is removed first), in a temp dir removed by Stop; Embedded serves
// miniredis from this process; Auto picks redis-server when it is on PATH
// and otherwise falls back to miniredis, unless requireReal is set, in
// which case a missing redis-server is an error. Progress lines go to log
// (nil: discarded).
func Start(ctx context.Context, addr string, mode proc.Mode, requireReal bool, log io.Writer) (*Server, error) {
	return StartAuth(ctx, addr, mode, requireReal, "", log)
}

// StartAuth is Start with password required of every client
// ("" for none); redis-server is told it in a config file only its
// account can read, never on its command line.
func StartAuth(ctx context.Context, addr string, mode proc.Mode, requireReal bool, password string, log io.Writer) (*Server, error) {
	addr, err := proc.Loopback(addr, "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stack: redis address: %w", err)
	}
	return LaunchServer(ctx, addr, mode, requireReal, "", password, proc.NewLogger(log))
}

// LaunchServer is Start with a run dir ("" = a temp dir of its own);
// addr has a host already (loopback) and a password ("" for none). It
// logs the server's summary line.
func LaunchServer(ctx context.Context, addr string, mode proc.Mode, requireReal bool, dir, password string, lg *proc.Logger) (*Server, error) {
	r, err := NewServer(addr, mode, requireReal, dir, password, lg)
	if err != nil {
		return nil, err
	}
	if err := proc.Launch(ctx, r); err != nil {
		return nil, err
	}
	lg.Printf("%s", r.Summary())
	return r, nil
}

// NewServer is a Server of the kind mode asks for, not started, requiring
// password of its clients ("" for none). It says so when Auto falls back
// to miniredis.
func NewServer(addr string, mode proc.Mode, requireReal bool, dir, password string, lg *proc.Logger) (*Server, error) {
	real, bin, err := proc.ResolveMode(mode, "redis-server", requireReal)
	if err != nil {
		return nil, fmt.Errorf("stack: redis: %w", err)
	}
	if !real {
		if mode != proc.Embedded {
			lg.Printf("redis-server not found on PATH: using embedded miniredis (Redis-compatible, in this process)")
		}
		return &Server{srv: embedded.NewRedis(addr, password), password: password}, nil
	}
	rs, err := newRedisServer(bin, addr, dir)
	if err != nil {
		return nil, err
	}
	rs.password = password
	return &Server{srv: rs, password: password}, nil
}

func (r *Server) Start(ctx context.Context) error { return r.srv.Start(ctx) }
func (r *Server) Ready(ctx context.Context) error { return r.srv.Ready(ctx) }

// Shutdown stops the server keeping its data, for Restart: redis-server
// by SHUTDOWN SAVE (its dataset written to its dump file, then it exits),
// miniredis by closing it (its data stays in this process). Shutting down
// a server already down does nothing.
func (r *Server) Shutdown(ctx context.Context) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if r.stopped {
		return errors.New("stack: redis: stopped")
	}
	if r.srv.Down() {
		return nil
	}
	return r.srv.Shutdown(ctx)
}

// restart brings a server that shutdown stopped back on its address with
// its data: redis-server from its dump (same --dir and --dbfilename),
// checked to be the new process as at the start; miniredis reopened on
// the same port. Restarting a running server does nothing.
func (r *Server) restart(ctx context.Context) error {
	r.opMu.Lock()
	defer r.opMu.Unlock()
	if r.stopped {
		return errors.New("stack: redis: stopped")
	}
	if !r.srv.Down() {
		return nil
	}
	return r.srv.Restart(ctx)
}

// Down reports whether Shutdown stopped the server and restart has not
// brought it back.
func (r *Server) Down() bool { return r.srv.Down() }

// Addr is the host:port the server listens on.
func (r *Server) Addr() string { return r.srv.Addr() }

// Password is what the server requires of its clients (AUTH), "" when
// it requires nothing (Start's). A stack's servers all require its
// own (Stack.RedisPassword).
func (r *Server) Password() string { return r.password }

// Embedded reports whether this is miniredis in this process.
func (r *Server) Embedded() bool {
	_, ok := r.srv.(*embedded.Redis)
	return ok
}

// DumpPath is the file a redis-server's Shutdown writes its dataset to,
// "" when embedded.
func (r *Server) DumpPath() string {
	if rs, ok := r.srv.(*redisServer); ok {
		return rs.dumpPath()
	}
	return ""
}

// Pid is the redis-server process id, 0 when embedded or while a stack
// has it stopped (Shutdown); after a restart, the new process's.
func (r *Server) Pid() int { return r.srv.Pid() }

// kind names the server and its version, "redis-server VERSION" or
// "embedded miniredis VERSION", for the summary lines.
func (r *Server) Kind() string { return r.srv.Kind() }

// Summary is its line in a stack's Summary.
func (r *Server) Summary() string {
	switch {
	case r.Down():
		return fmt.Sprintf("redis: %s on %s (stopped; its data kept for a restart)", r.Kind(), r.Addr())
	case r.Embedded():
		return fmt.Sprintf("redis: %s on %s (in this process; TTLs advanced every %s)", r.Kind(), r.Addr(), embedded.ExpireTick)
	default:
		return fmt.Sprintf("redis: %s on %s (pid %d)", r.Kind(), r.Addr(), r.Pid())
	}
}

// Stop stops the server (SIGTERM, SIGKILL after a grace period) and waits
// for it; it is idempotent.
func (r *Server) Stop() error {
	r.stopOnce.Do(func() {
		r.opMu.Lock()
		defer r.opMu.Unlock()
		r.stopped = true
		r.stopErr = r.srv.Stop()
	})
	return r.stopErr
}

// LogPath is where a redis-server's output goes, "" when embedded.
func (r *Server) LogPath() string {
	if rs, ok := r.srv.(*redisServer); ok {
		return rs.logPath()
	}
	return ""
}
