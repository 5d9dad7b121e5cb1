package backends

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockladder/lockladder/stack/proc"
)

// Postgres is a PostgreSQL server, the pg-advisory rungs' back end: a
// fresh cluster where Config.Data says (initdb), Postgres listening on a
// loopback port only, its unix socket in its own dir (mode 0700). Two
// roles, each with a password made for this server (scram-sha-256, on
// the socket too): postgresSuper, the bootstrap superuser, which only
// the stack knows, and postgresUser, which the apps log in as, owner of
// their database and nothing else.
type Postgres struct {
	process              // socket, password file in work; the cluster in dataDir
	bin           string // the dir of initdb and postgres
	password      string // postgresUser's
	superPassword string // postgresSuper's
}

const (
	postgresSuper = "postgres"
	postgresUser  = "lockladder"
	// postgresDatabase is the apps' database, postgresUser's.
	postgresDatabase = "lockladder"
	// postgresMaxConnections is above what the instances' pools may open
	// together (backend.PostgresPool each), with room for the tests and
	// the lab's control connection.
	postgresMaxConnections = 200
)

// PostgresEnv is the variable the app reads its PostgreSQL DSN from
// (-postgres's default): the stack passes it there, password and all,
// where other users cannot read it.
const PostgresEnv = "POSTGRES_DSN"

// FindPostgres returns the dir of Debian's initdb and postgres (under
// /usr/lib/postgresql/VERSION/bin, the newest, which no PATH names), or
// why there is none.
func FindPostgres() (string, error) {
	if proc.Hidden() {
		return "", fmt.Errorf("postgres: %s", proc.Install("postgres"))
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "initdb")); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(a) - pgVersion(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("postgres not found in /usr/lib/postgresql/*/bin nor on PATH (install Debian's postgresql)")
}

// pgVersion is VERSION in /usr/lib/postgresql/VERSION/bin, 0 if not a number.
func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func NewPostgres(bin, host, dir, data string, lg *proc.Logger) *Postgres {
	return &Postgres{bin: bin, password: NewPassword(), superPassword: NewPassword(),
		process: process{kind: "postgres", host: host, dir: filepath.Join(dir, "postgres"), data: data, lg: lg}}
}

// dsn is how a client logs in as user: a URL pgx reads.
func (p *Postgres) dsnAs(user, password, database string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: p.Addr(), Path: "/" + database,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// DSN is the apps' DSN (PostgresEnv), in their environment, never on
// their command line.
func (p *Postgres) DSN() string { return p.dsnAs(postgresUser, p.password, postgresDatabase) }

func (p *Postgres) ClientAddr() string { return p.DSN() }
func (p *Postgres) Flags() []string    { return nil }
func (p *Postgres) Env() []string      { return []string{PostgresEnv + "=" + p.DSN()} }

// start makes an empty cluster (the first time) and starts the server on
// it; started again after a stop, it keeps the port, the passwords and
// the data.
func (p *Postgres) Start(ctx context.Context) error {
	if err := p.dirs(); err != nil {
		return err
	}
	a, err := proc.ServerAccount()
	if err != nil {
		return err
	}
	picked, err := p.pickPort()
	if err != nil {
		return err
	}
	if picked {
		// initdb reads the superuser's password from a file, which it
		// must be able to read as the server's account; removed after.
		pwfile := filepath.Join(p.work, "pwfile")
		if err := proc.WriteServerFile(pwfile, []byte(p.superPassword+"\n"), 0o600); err != nil {
			return fmt.Errorf("stack: postgres: %w", err)
		}
		initdb := exec.CommandContext(ctx, filepath.Join(p.bin, "initdb"), "-D", p.dataDir,
			"-U", postgresSuper, "--pwfile="+pwfile, "--auth=scram-sha-256",
			"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
		initdb.Dir = p.work
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: a.Credential()}
		out, err := initdb.CombinedOutput()
		os.Remove(pwfile)
		if err != nil {
			return fmt.Errorf("stack: postgres: initdb: %w\n%s", err, out)
		}
	}
	args := []string{
		"-D", p.dataDir, "-p", p.port,
		"-c", "listen_addresses=" + p.host,
		"-c", "unix_socket_directories=" + p.work,
		"-c", "unix_socket_permissions=0700",
		"-c", "max_connections=" + strconv.Itoa(postgresMaxConnections),
		"-c", "shared_buffers=32MB",
		"-c", "password_encryption=scram-sha-256",
		"-c", "logging_collector=off",
		// Its dynamic shared memory as files in the data dir (which the
		// stack removes), not in /dev/shm: a server killed, as a crash
		// or a dead supervisor's leftovers are, leaves no segment behind.
		"-c", "dynamic_shared_memory_type=mmap",
	}
	p.proc, err = proc.StartServer("postgres", filepath.Join(p.bin, "postgres"), args, p.work,
		filepath.Join(p.dir, "postgres.log"), syscall.SIGKILL)
	return err
}

// ready waits until the server serves, then makes the apps' role and
// database (again at every start: the role's password is this stack's).
func (p *Postgres) Ready(ctx context.Context) error {
	return p.ready(ctx, p.serving, p.Start)
}

// serving waits until the superuser can log in, and sets the apps' role
// and database up.
func (p *Postgres) serving(ctx context.Context) error {
	super := p.dsnAs(postgresSuper, p.superPassword, "postgres")
	var conn *pgx.Conn
	err := p.await(ctx, func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		c, err := pgx.Connect(cctx, super)
		conn = c
		return err == nil
	})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return p.setUp(ctx, conn)
}

// setUp makes postgresUser (LOGIN, no other privilege) with this
// server's password, and its database.
func (p *Postgres) setUp(ctx context.Context, conn *pgx.Conn) error {
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&p.version); err != nil {
		return fmt.Errorf("stack: postgres: %w", err)
	}
	// The password is 32 hex digits: nothing to escape, and no
	// placeholder is allowed in a utility statement.
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", postgresUser).Scan(&exists); err != nil {
		return fmt.Errorf("stack: postgres: %w", err)
	}
	verb := "CREATE"
	if exists {
		verb = "ALTER"
	}
	if _, err := conn.Exec(ctx, verb+" ROLE "+postgresUser+" LOGIN PASSWORD '"+p.password+"'"); err != nil {
		return fmt.Errorf("stack: postgres: role %s: %w", postgresUser, err)
	}
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", postgresDatabase).Scan(&exists); err != nil {
		return fmt.Errorf("stack: postgres: %w", err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+postgresDatabase+" OWNER "+postgresUser); err != nil {
			return fmt.Errorf("stack: postgres: database %s: %w", postgresDatabase, err)
		}
	}
	return nil
}

func (p *Postgres) Stop() error {
	if p.proc == nil {
		return nil
	}
	// SIGQUIT to the postmaster alone: its immediate shutdown, as a
	// crash would, ends every session at once, and no session releases
	// the locks it held (each backend exits at once; the lock table goes
	// with the server). Its fast shutdown (SIGINT) ends the sessions one
	// by one, each freeing its advisory locks as it exits, so a session
	// not yet ended can be granted a lock beside a holder still writing:
	// a double grant on the way down that no downtime can prevent, seen
	// in a CI run and reproduced (TestPostgresStopGrantsNothing; its
	// figures are in MEASUREMENTS.md). session-cut stages that flaw on
	// purpose. A SIGTERM is its smart shutdown, which waits for clients.
	// The data stays: the next start replays the WAL.
	return p.proc.StopLeader(syscall.SIGQUIT, proc.StopGrace)
}

func (p *Postgres) Summary() string {
	v, _, _ := strings.Cut(p.version, " ")
	return fmt.Sprintf("postgres: PostgreSQL %s on %s (pid %d)", v, p.Addr(), p.proc.Pid())
}
