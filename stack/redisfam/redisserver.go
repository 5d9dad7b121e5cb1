package redisfam

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/embedded"
	"github.com/lockladder/lockladder/stack/proc"
)

// redisServer is a redis-server process on loopback with nothing
// persisted (no save points, no AOF), in a dir of its own or the stack's
// run dir. Only shutdown writes a dump (SHUTDOWN SAVE), which restart
// loads back. Its memory is bounded (MaxMemory).
type redisServer struct {
	bin        string
	host, port string
	// pickPort: the port asked for was 0, so start picks a free one, and
	// ready another when some other process binds it first.
	pickPort bool
	dir      string // its log
	rmDir    bool   // dir is a temp dir of its own, removed by stop
	work     string // what it writes (--dir: dump, pid file, cluster config): dir, or as root proc.ServerDir of dir/redis
	rmWork   bool   // work is a temp dir of proc.ServerDir's, removed by stop
	version  string
	extra    []string // more redis-server options (a cluster node's)
	// password, when set, is required of every client (requirepass) and
	// given to the masters a replica follows (masterauth). It reaches
	// the server in a config file only its account can read, never on
	// the command line, which ps shows to every user of the host.
	password string

	// next is the process start or restart started and ready has not
	// yet found serving (start, ready, restart and stop are serialised
	// by their callers).
	next *proc.Proc

	mu     sync.Mutex // guards p, isDown and aof
	p      *proc.Proc // the current process: a new one after restart
	isDown bool       // shut down by shutdown, not yet restarted
	aof    bool       // Persist turned the append-only file on: restarts keep it
}

// newRedisServer is a redis-server for addr (port 0: a free one) with
// its files in dir ("" = a temp dir of its own), not started.
func newRedisServer(bin, addr, dir string) (*redisServer, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("stack: redis address %q: %w", addr, err)
	}
	return &redisServer{bin: bin, host: host, port: port, pickPort: port == "0", dir: dir}, nil
}

// start starts a fresh, empty server.
func (r *redisServer) Start(ctx context.Context) error {
	if r.dir == "" {
		d, err := proc.TempDir("redis")
		if err != nil {
			return fmt.Errorf("stack: redis: %w", err)
		}
		r.dir, r.rmDir = d, true
		if err := proc.Reachable(d); err != nil {
			return fmt.Errorf("stack: redis: %w", err)
		}
	}
	if err := r.makeWork(); err != nil {
		return err
	}
	if r.version == "" {
		r.version = proc.BinaryVersion(r.bin, `v=(\S+)`, "--version")
	}
	if r.pickPort {
		port, err := proc.FreePort(r.host)
		if err != nil {
			return err
		}
		r.port = port
	}
	// A fresh server starts empty: a dump an earlier run left here (its
	// StopRedis saved one) must not be loaded, nor a cluster node's
	// config, which would make it rejoin that cluster.
	for _, stale := range []string{r.dumpPath(), r.clusterConf()} {
		if stale == "" {
			continue
		}
		if err := os.Remove(stale); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stack: redis: stale file: %w", err)
		}
	}
	return r.spawn()
}

// makeWork makes the dir the server writes in, once: its own dir when
// it runs as this process does; as root, dir/redis, the server
// account's (proc.ServerDir), shared by the servers of one run dir (their
// files are named after their ports).
func (r *redisServer) makeWork() error {
	if r.work != "" {
		return nil
	}
	a, err := proc.ServerAccount()
	if err != nil {
		return err
	}
	if a == nil {
		r.work = r.dir
		return nil
	}
	r.work, r.rmWork, err = proc.ServerDir(filepath.Join(r.dir, "redis"))
	return err
}

// clusterConf is the path of a cluster node's config file (its
// --cluster-config-file, a name in work), "" for a server of no cluster.
func (r *redisServer) clusterConf() string {
	for i, a := range r.extra {
		if a == "--cluster-config-file" && i+1 < len(r.extra) {
			return filepath.Join(r.work, r.extra[i+1])
		}
	}
	return ""
}

// ready waits until the server start started answers. A free port is
// free only until someone binds it: another test package starting its
// own Redis at the same moment may take it first. Then ours cannot bind
// (ErrPortTaken), and ready starts it again on another, up to 5 times.
func (r *redisServer) Ready(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := r.await(ctx)
		if !errors.Is(err, ErrPortTaken) || !r.pickPort || attempt == 5 {
			return err
		}
		if err := r.Start(ctx); err != nil {
			return err
		}
	}
}

// MaxMemory bounds each redis-server the stack starts (and each of
// the compose files'), generously: a client that makes keys without end
// (or a lock that leaks them) fills it, not the machine. Its policy is
// noeviction: full, Redis refuses writes (the app answers 503) rather
// than drop a lock, a counter or the run guard without a word.
const MaxMemory = "256mb"

// ErrPortTaken: the port answered, but not with our server.
var ErrPortTaken = errors.New("port taken by another process")

// spawn starts redis-server on the server's address as r.next. The dump
// file is written only by shutdown (SHUTDOWN SAVE) and read back by the
// restart, from the same --dir and --dbfilename.
func (r *redisServer) spawn() error {
	// Nothing persisted, nothing shared with a Redis the user runs: own
	// port, loopback only, own dir. Deletions and expiries announced on
	// the keyspace channels, from the start and after every restart.
	r.mu.Lock()
	aof := r.aof
	r.mu.Unlock()
	persist := []string{"--appendonly", "no"}
	if aof { // Server.Persist: restarts load the file and keep writing it
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	var args []string
	if r.password != "" {
		conf := r.confPath()
		auth := "requirepass " + r.password + "\nmasterauth " + r.password + "\n"
		if err := proc.WriteServerFile(conf, []byte(auth), 0o600); err != nil {
			return fmt.Errorf("stack: redis-server on %s: its config: %w", r.Addr(), err)
		}
		args = append(args, conf) // a config file comes first, options after it
	}
	args = append(args,
		"--port", r.port, "--bind", r.host, "--save", "")
	args = append(args, persist...)
	args = append(args, "--maxmemory", MaxMemory, "--maxmemory-policy", "noeviction")
	args = append(args,
		"--notify-keyspace-events", embedded.KeyspaceEvents,
		"--daemonize", "no", "--dir", r.work, "--dbfilename", filepath.Base(r.dumpPath()),
		"--pidfile", filepath.Join(r.work, "redis-"+r.port+".pid"),
	)
	args = append(args, r.extra...)
	p, err := proc.StartServer("redis-server", r.bin, args, r.work, r.logPath(), syscall.SIGKILL)
	if err != nil {
		return err
	}
	r.next = p
	return nil
}

// await returns once the process spawn started answers on the server's
// address (its process_id, not some other server's) and PING has its
// PONG (not LOADING: a restart loads the dump first); it becomes the
// current process. On failure that process is stopped.
func (r *redisServer) await(ctx context.Context) (err error) {
	p, addr := r.next, r.Addr()
	r.next = nil
	defer func() {
		if err != nil {
			p.Stop(proc.StopGrace)
		}
		// The server read its password at its start: the file that
		// held it goes now, not at the stack's stop, which a SIGKILL
		// may never reach.
		r.removeConf()
	}()
	ctx, cancel := proc.WithDefaultTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		if pid, err := serverPid(ctx, addr, r.password); err == nil {
			if pid != p.Pid() {
				// Someone else's Redis answers there: ours will fail to bind.
				return fmt.Errorf("stack: redis-server on %s: %w (pid %d answers)", addr, ErrPortTaken, pid)
			}
			if redisPing(ctx, addr, r.password) == nil {
				break
			}
		}
		select {
		case <-p.Done():
			tail := proc.LogTail(p.LogPath(), 2048)
			if r.pickPort && strings.Contains(tail, "bind: Address already in use") {
				// The port was free when picked and taken before ours
				// bound it (another package's server, or a connection's
				// source port): the same race as above, found by ours.
				return fmt.Errorf("stack: redis-server on %s: %w (bind: address already in use)%s", addr, ErrPortTaken, tail)
			}
			return fmt.Errorf("stack: redis-server on %s exited: %v%s", addr, p.ExitErr(), tail)
		case <-ctx.Done():
			return fmt.Errorf("stack: redis-server on %s: no PONG: %w%s", addr, ctx.Err(), proc.LogTail(p.LogPath(), 2048))
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.mu.Lock()
	r.p, r.isDown = p, false
	r.mu.Unlock()
	return nil
}

// stop stops the process by pid (SIGTERM, SIGKILL after a grace period)
// and removes a temp dir of its own.
func (r *redisServer) Stop() error {
	var errs []error
	if r.next != nil {
		errs = append(errs, r.next.Stop(proc.StopGrace))
		r.next = nil
	}
	if p := r.current(); p != nil {
		errs = append(errs, p.Stop(proc.StopGrace))
	}
	r.removeConf()
	if r.rmWork {
		errs = append(errs, os.RemoveAll(r.work))
	}
	if r.rmDir {
		errs = append(errs, os.RemoveAll(r.dir))
	}
	return errors.Join(errs...)
}

// shutdown stops the server by SHUTDOWN SAVE: it writes its dataset to
// its dump file, then exits.
func (r *redisServer) Shutdown(ctx context.Context) error {
	p, addr := r.current(), r.Addr()
	ctx, cancel := proc.WithDefaultTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := shutdownSave(ctx, addr, r.password); err != nil {
		return fmt.Errorf("stack: redis-server on %s (pid %d): SHUTDOWN SAVE: %w", addr, p.Pid(), err)
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		return fmt.Errorf("stack: redis-server on %s (pid %d) still runs after SHUTDOWN SAVE: %w", addr, p.Pid(), ctx.Err())
	}
	// Whatever its exit, the process is gone: mark it down before looking.
	r.mu.Lock()
	r.isDown = true
	r.mu.Unlock()
	p.Stop(proc.StopGrace) // reaped already: only sweeps its process group
	if p.WaitErr() != nil {
		return fmt.Errorf("stack: redis-server on %s (pid %d) after SHUTDOWN SAVE: %v%s", addr, p.Pid(), p.WaitErr(), proc.LogTail(p.LogPath(), 2048))
	}
	return nil
}

// restart starts the server again on its address from its dump, checked
// to be the new process as at the start.
func (r *redisServer) Restart(ctx context.Context) error {
	if err := r.spawn(); err != nil {
		return err
	}
	return r.await(ctx)
}

func (r *redisServer) current() *proc.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

func (r *redisServer) Addr() string { return net.JoinHostPort(r.host, r.port) }

func (r *redisServer) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p == nil || r.isDown {
		return 0
	}
	return r.p.Pid()
}

func (r *redisServer) Down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.isDown
}

func (r *redisServer) Kind() string { return "redis-server " + r.version }

// dumpPath is the server's dump file, named after its port: the main
// Redis and the masters share the stack's run dir, and a master started
// again must not load the main Redis's dump.
func (r *redisServer) dumpPath() string {
	return filepath.Join(r.work, "redis-"+r.port+".rdb")
}

// confPath is the server's config file: its password, read at its
// start (spawn writes it, await removes it).
func (r *redisServer) confPath() string {
	return filepath.Join(r.work, "redis-"+r.port+".conf")
}

// removeConf removes the config file, if there is one.
func (r *redisServer) removeConf() {
	if r.password != "" && r.work != "" {
		os.Remove(r.confPath())
	}
}

// logPath is where the server's output goes.
func (r *redisServer) logPath() string {
	return filepath.Join(r.dir, "redis-"+r.port+".log")
}
