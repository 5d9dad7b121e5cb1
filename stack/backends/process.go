package backends

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
)

// process is what ZooKeeper, MariaDB and PostgreSQL share: one server
// process on a loopback port, its dirs made once (proc.ServerDirs), the
// port picked at its first start and kept across a stop and a start, and
// the same wait until it serves. Each embeds it and adds what it runs and
// how it knows it serves.
type process struct {
	kind       string // "zookeeper", "mariadb", "postgres": its dir's name, and in errors
	host, port string
	dir        string // its log
	work       string // its own files (config, socket, pid file): proc.ServerDir of dir
	data       string // its data (proc.DataRoot)
	dataDir    string // where it is: proc.ServerDir of data
	temps      []string
	version    string
	picked     bool // start chose the port: ready may choose another
	lg         *proc.Logger
	proc       *proc.Proc
}

func (s *process) Addr() string { return net.JoinHostPort(s.host, s.port) }
func (s *process) Kind() string { return s.kind }

func (s *process) Pid() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// dirs makes the server's dirs, once: a start after a stop keeps them.
func (s *process) dirs() error {
	if s.work != "" {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("stack: %s: %w", s.kind, err)
	}
	var err error
	s.work, s.dataDir, s.temps, err = proc.ServerDirs(s.lg, s.kind, s.dir, s.data)
	return err
}

// pickPort picks a free port at the first start, and empties the data
// dir then: every stack starts from empty (a reused run dir's old data
// would hold its locks). A start after a stop keeps both. It reports
// whether it picked one.
func (s *process) pickPort() (bool, error) {
	s.picked = s.port == ""
	if !s.picked {
		return false, nil
	}
	port, err := proc.FreePort(s.host)
	if err != nil {
		return false, err
	}
	s.port = port
	if err := proc.EmptyDir(s.dataDir); err != nil {
		return false, fmt.Errorf("stack: %s: %w", s.kind, err)
	}
	return true, nil
}

// ready waits until serving says the server serves; one that exits while
// starting on a port start picked is started again on another
// (proc.ReadyOnFreePort).
func (s *process) ready(ctx context.Context, serving, start func(context.Context) error) error {
	return proc.ReadyOnFreePort(ctx, s.lg, s.kind, &s.picked, s.Addr, serving, func(ctx context.Context) error {
		s.port = ""
		return start(ctx)
	})
}

// await calls serves every 50ms until it says the server serves, and
// fails when the process exits or ctx ends first.
func (s *process) await(ctx context.Context, serves func() bool) error {
	for !serves() {
		select {
		case <-s.proc.Done():
			return fmt.Errorf("stack: %s %w: %v\n%s", s.kind, proc.ErrExitedStarting, s.proc.ExitErr(), proc.LogTail(s.proc.LogPath(), 2048))
		case <-ctx.Done():
			return fmt.Errorf("stack: %s on %s not serving: %w", s.kind, s.Addr(), ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Stop stops the process by its pid (SIGTERM, SIGKILL after a grace
// period).
func (s *process) Stop() error {
	if s.proc == nil {
		return nil
	}
	return s.proc.Stop(proc.StopGrace)
}

// Remove deletes the temp dirs proc.ServerDir made for it: after its last
// stop.
func (s *process) Remove() error { return proc.RemoveAll(s.temps) }
