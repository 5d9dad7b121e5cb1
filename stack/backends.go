package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	pgbackend "github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/proc"
)

// Off, for Config.ZooKeeper, MariaDB, Etcd and Postgres, starts no such server: its
// rung answers 503, naming the server it lacks. "" means Off there.
const Off Mode = "off"

// newBackends describes the back ends cfg asks for, deciding each one's
// mode before anything starts: one that Auto cannot find is left out (its
// rung is unavailable, and the log says so), unless RequireReal is set.
func newBackends(cfg Config, dir string, data *proc.DataRoot, lg *proc.Logger) ([]backends.Backend, error) {
	var out []backends.Backend
	want := func(m Mode) bool { return m != "" && m != Off }
	if data == nil {
		data = proc.OnDisk(dir)
	}

	if want(cfg.ZooKeeper) {
		java, jar, err := backends.FindZooKeeper()
		switch {
		case err == nil:
			out = append(out, backends.NewZooKeeper(java, jar, "127.0.0.1", dir, data.Of("zookeeper"), lg))
		case cfg.ZooKeeper == Real || cfg.RequireReal:
			return nil, fmt.Errorf("stack: zookeeper: %w", err)
		default:
			lg.Printf("zookeeper: not started (%v): the zookeeper rung answers 503", err)
		}
	}
	if want(cfg.MariaDB) {
		srv, install, err := backends.FindMariaDB()
		switch {
		case err == nil:
			out = append(out, backends.NewMariaDB(srv, install, "127.0.0.1", dir, data.Of("mariadb"), lg))
		case cfg.MariaDB == Real || cfg.RequireReal:
			return nil, fmt.Errorf("stack: mariadb: %w", err)
		default:
			lg.Printf("mariadb: not started (%v): the db-for-update and db-optimistic rungs answer 503", err)
		}
	}
	if want(cfg.Postgres) {
		bin, err := backends.FindPostgres()
		switch {
		case err == nil:
			out = append(out, backends.NewPostgres(bin, "127.0.0.1", dir, data.Of("postgres"), lg))
		case cfg.Postgres == Real || cfg.RequireReal:
			return nil, fmt.Errorf("stack: postgres: %w", err)
		default:
			lg.Printf("postgres: not started (%v): the pg-advisory rungs answer 503", err)
		}
	}
	if want(cfg.Etcd) {
		bin, err := proc.LookPath("etcd")
		switch {
		case cfg.Etcd == Embedded:
			bin = ""
		case err == nil:
		case cfg.Etcd == Real || cfg.RequireReal:
			return nil, fmt.Errorf("stack: etcd: not on PATH (install Debian's etcd-server): %w", err)
		default:
			bin = ""
			lg.Printf("etcd not found on PATH: using an etcd server embedded in this process")
		}
		out = append(out, backends.NewEtcd(bin, "127.0.0.1", dir, data.Of("etcd"), lg))
	}
	return out, nil
}

// startBackends launches the back ends together (ZooKeeper's JVM and
// MariaDB's install take a few seconds each) and logs what runs.
func (s *Stack) startBackends(ctx context.Context) error {
	if len(s.backends) == 0 {
		return nil
	}
	g := make(proc.Group, len(s.backends))
	for i, b := range s.backends {
		g[i] = b
	}
	if err := s.up(ctx, g); err != nil {
		return err
	}
	for _, b := range s.backends {
		s.lg.Printf("%s", b.Summary())
	}
	s.lg.Printf("data: the back ends keep their data %s", s.data)
	return nil
}

// Backends lists the kinds of back end the stack runs ("zookeeper",
// "mariadb", "etcd", "postgres"), in the order they started.
func (s *Stack) Backends() []string {
	var kinds []string
	for _, b := range s.backends {
		kinds = append(kinds, b.Kind())
	}
	return kinds
}

// StopBackend stops the back end of kind as Stop would (SIGTERM, closing
// the embedded etcd; the databases as a crash would: MariaDB killed,
// PostgreSQL's immediate shutdown, so that none grants a lock on its way
// down), keeping its data: its rungs' requests then fail with a 503.
// Stopping a stopped one does nothing.
func (s *Stack) StopBackend(kind string) error {
	s.backendMu.Lock()
	defer s.backendMu.Unlock()
	b, err := s.backend(kind)
	if err != nil || s.backendDown[kind] {
		return err
	}
	s.backendDown[kind] = true
	s.lg.Printf("%s: stopping (StopBackend)", kind)
	return b.Stop()
}

// StartBackend starts a stopped back end again on the same address with
// the same data, and returns once it serves (at most 30s); its clients in
// the instances reconnect by themselves. Starting a running one does
// nothing.
func (s *Stack) StartBackend(kind string) error {
	s.backendMu.Lock()
	defer s.backendMu.Unlock()
	b, err := s.backend(kind)
	if err != nil || !s.backendDown[kind] {
		return err
	}
	if s.life.Err() != nil {
		return errors.New("stack: StartBackend: the stack is stopped")
	}
	ctx, cancel := context.WithTimeout(s.life, 30*time.Second)
	defer cancel()
	if err := proc.Launch(ctx, b); err != nil {
		return err
	}
	s.backendDown[kind] = false
	s.lg.Printf("%s", b.Summary())
	return nil
}

func (s *Stack) backend(kind string) (backends.Backend, error) {
	for _, b := range s.backends {
		if b.Kind() == kind {
			if s.backendDown == nil {
				s.backendDown = map[string]bool{}
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("stack: no %s in this stack (it runs: %v)", kind, s.Backends())
}

// backendFlags are the flags that tell every instance where the back ends
// are.
func (s *Stack) backendFlags() []string {
	var f []string
	for _, b := range s.backends {
		f = append(f, b.Flags()...)
	}
	return f
}

// backendEnv is what every instance's environment says of the back ends.
func (s *Stack) backendEnv() []string {
	var env []string
	for _, b := range s.backends {
		env = append(env, b.Env()...)
	}
	return env
}

// removeBackends deletes the temp dirs the back ends made, once stopped.
func (s *Stack) removeBackends() error {
	var errs []error
	for _, b := range s.backends {
		errs = append(errs, b.Remove())
	}
	return errors.Join(errs...)
}

// StartBackend starts one back end outside a stack, as a stack would
// (kind "zookeeper", "mariadb" or "etcd"; mode as Config's), its files in
// dir, and returns where a client reaches it (ZooKeeper's host:port,
// MariaDB's DSN with its password, etcd's client URL) and how to stop it.
// Tests use it.
func StartBackend(ctx context.Context, kind string, mode Mode, requireReal bool, dir string) (addr string, stop func() error, err error) {
	var cfg Config
	cfg.RequireReal = requireReal
	switch kind {
	case "zookeeper":
		cfg.ZooKeeper = mode
	case "mariadb":
		cfg.MariaDB = mode
	case "etcd":
		cfg.Etcd = mode
	case "postgres":
		cfg.Postgres = mode
	default:
		return "", nil, fmt.Errorf("stack: no back end %q (zookeeper, mariadb, etcd, postgres)", kind)
	}
	if mode == "" || mode == Off {
		return "", nil, fmt.Errorf("stack: %s: mode %q starts nothing", kind, mode)
	}
	bs, err := newBackends(cfg, dir, nil, proc.NewLogger(nil))
	if err != nil {
		return "", nil, err
	}
	if len(bs) == 0 {
		return "", nil, fmt.Errorf("stack: %s is not installed", kind)
	}
	b := bs[0]
	if err := proc.Launch(ctx, b); err != nil {
		b.Remove()
		return "", nil, err
	}
	return b.ClientAddr(), func() error { return errors.Join(b.Stop(), b.Remove()) }, nil
}

// DataDir is the tmpfs dir the back ends keep their data in, or "" when
// they keep it in the run dir (or there are none).
func (s *Stack) DataDir() string { return s.data.InMemory() }

// CutPostgresHolders terminates the sessions of the stack's PostgreSQL
// that hold an advisory lock and have been idle for at least idle (a
// holder in the middle of its section), from a control connection of
// the stack's own, as a pooler, a failover or a network cut would end
// them. It looks every poll until it has cut one, and returns how many
// it cut, or ctx's error when none was found before ctx ended. The
// session-cut scenario calls it.
//
// One control connection serves every look: a connection per look (a
// PostgreSQL backend forked and a SCRAM login each time) took so long on
// a loaded machine that the looks missed the holder's idle window.
func (s *Stack) CutPostgresHolders(ctx context.Context, idle, poll time.Duration) (int, error) {
	b, err := s.backend("postgres")
	if err != nil {
		return 0, err
	}
	began := time.Now()
	conn, err := pgx.Connect(ctx, b.ClientAddr())
	if err != nil {
		return 0, fmt.Errorf("stack: postgres: control connection (after %s): %w", time.Since(began).Round(time.Millisecond), err)
	}
	defer conn.Close(context.Background())
	connected := time.Since(began)
	for looks := 1; ; looks++ {
		// One look at a time, sparing the sessions cut before: a
		// terminated backend stays listed until it has exited, and a
		// second hook's look counted it again (its own holder was then
		// never cut).
		s.cutMu.Lock()
		cut, err := pgbackend.CutAdvisoryHoldersBut(ctx, conn, idle, s.cutPids)
		s.cutPids = append(s.cutPids, cut...)
		s.cutMu.Unlock()
		if err != nil || len(cut) > 0 {
			return len(cut), err
		}
		select {
		case <-ctx.Done():
			// What the look did, for a fault that found nothing.
			return 0, fmt.Errorf("stack: postgres: %d looks in %s (connected after %s): %w",
				looks, time.Since(began).Round(time.Millisecond), connected.Round(time.Millisecond), ctx.Err())
		case <-time.After(poll):
		}
	}
}
