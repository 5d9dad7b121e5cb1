package backends

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
)

// MariaDB is a MariaDB server, the database rungs' back end: a fresh data
// dir where Config.Data says (MariaDB-install-db), mariadbd on a loopback port,
// nothing else listening. The apps log in as MariaDBUser with a password
// made for this server; root logs in only through the socket, as the
// OS's root (unix_socket); neither may write files outside the server's
// own dir (secure_file_priv), and the apps' user may write none at all
// (it lacks FILE).
type MariaDB struct {
	process         // socket, pid file, init file, secure_file_priv in work; the database in dataDir
	server, install string
	password        string
}

// MariaDBUser is the account the apps log in as: it may read and write
// tables, create and drop databases, and list transactions (the tests'
// INFORMATION_SCHEMA.INNODB_TRX); not FILE, SUPER, SHUTDOWN or GRANT.
const MariaDBUser = "lockladder"

// mariadbGrants are MariaDBUser's privileges, on every database.
const mariadbGrants = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, PROCESS"

// MariaDBMaxConnections is the server's max_connections: above what the
// instances' pools may open together (backend.MySQLPool each, checked
// for the default three by TestMariaDBOutlastsThePools).
const MariaDBMaxConnections = 500

// FindMariaDB returns mariadbd and mariadb-install-db, or why there are
// none. Debian's mariadb-server puts mariadbd in /usr/sbin, which a
// user's PATH may lack.
func FindMariaDB() (server, install string, err error) {
	server, err = proc.LookPath("mariadbd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mariadbd"); serr != nil || proc.Hidden() {
			return "", "", fmt.Errorf("mariadbd not found (install Debian's mariadb-server): %w", err)
		}
		server = "/usr/sbin/mariadbd"
	}
	if install, err = proc.LookPath("mariadb-install-db"); err != nil {
		return "", "", fmt.Errorf("mariadb-install-db not found (install Debian's mariadb-server): %w", err)
	}
	return server, install, nil
}

func NewMariaDB(server, install, host, dir, data string, lg *proc.Logger) *MariaDB {
	return &MariaDB{server: server, install: install, password: NewPassword(),
		process: process{kind: "mariadb", host: host, dir: filepath.Join(dir, "mariadb"), data: data, lg: lg}}
}

// NewPassword is a password made for one server: 128 random bits, in hex
// (nothing a DSN must escape).
func NewPassword() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// DSN is how the app connects (github.com/go-sql-driver/mysql's form),
// password included: the stack hands it to the apps in their
// environment (MySQLEnv), which other users cannot read, never in their
// command line, which they can.
func (m *MariaDB) DSN() string {
	return MariaDBUser + ":" + m.password + "@tcp(" + m.Addr() + ")/"
}

// dirs makes the server's dirs, once: a start after a stop keeps them.
func (m *MariaDB) dirs() error {
	if m.work != "" {
		return nil
	}
	if err := m.process.dirs(); err != nil {
		return err
	}
	if _, _, err := proc.ServerDir(m.filesDir()); err != nil {
		return err
	}
	_, _, err := proc.ServerDir(m.tmpDir())
	return err
}

// tmpDir is the server's own temporary dir: in the host's /tmp, another
// MariaDB's bootstrap (a test's, a second stack's) once deleted a
// temporary table file of this one's (Errcode 2) and failed its install.
func (m *MariaDB) tmpDir() string { return filepath.Join(m.work, "tmp") }

// filesDir is the one dir where the server reads and writes files for a
// client (secure_file_priv): LOAD DATA INFILE, SELECT ... INTO OUTFILE.
func (m *MariaDB) filesDir() string { return filepath.Join(m.work, "files") }

// start installs an empty database and starts the server on it; started
// again after a stop, it keeps the port, the password and the data.
func (m *MariaDB) Start(ctx context.Context) error {
	if err := m.dirs(); err != nil {
		return err
	}
	a, err := proc.ServerAccount()
	if err != nil {
		return err
	}
	runAs := currentUser()
	if a != nil {
		runAs = a.Name
	}
	// Every stack starts from an empty database.
	picked, err := m.pickPort()
	if err != nil {
		return err
	}
	if picked {
		// root@localhost by the socket only, for the OS's root
		// (unix_socket), and no other account: the default would add
		// one for the user the server runs as.
		install := exec.CommandContext(ctx, m.install, "--no-defaults", "--datadir="+m.dataDir,
			"--tmpdir="+m.tmpDir(), "--skip-test-db", "--user="+runAs, "--auth-root-socket-user=root")
		install.Dir = m.work
		install.SysProcAttr = &syscall.SysProcAttr{Credential: a.Credential()}
		if out, err := install.CombinedOutput(); err != nil {
			return fmt.Errorf("stack: mariadb-install-db: %w\n%s", err, out)
		}
	}
	// Run at every start, before the server takes a client: the apps'
	// account, with this server's password.
	account := fmt.Sprintf("'%s'@'%s'", MariaDBUser, m.host)
	init := strings.Join([]string{
		"CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY '" + m.password + "';",
		"ALTER USER " + account + " IDENTIFIED BY '" + m.password + "';",
		"GRANT " + mariadbGrants + " ON *.* TO " + account + ";",
	}, "\n") + "\n"
	initFile := m.initFile()
	if err := proc.WriteServerFile(initFile, []byte(init), 0o600); err != nil {
		return fmt.Errorf("stack: mariadb: %w", err)
	}
	args := []string{
		"--no-defaults", "--datadir=" + m.dataDir, "--tmpdir=" + m.tmpDir(),
		"--port=" + m.port, "--bind-address=" + m.host,
		"--socket=" + m.socket(), "--pid-file=" + m.pidFile(),
		"--user=" + runAs, "--skip-name-resolve", "--skip-log-bin",
		"--init-file=" + initFile, "--secure-file-priv=" + m.filesDir(), "--local-infile=0",
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
		// A row lock is the db-for-update rung's lock: a waiter gives up
		// after its own wait (the app sets it per session), and a holder
		// whose connection dies loses it with the connection.
		"--max-connections=" + strconv.Itoa(MariaDBMaxConnections),
		// The server bounds no row-lock wait of its own (an hour, not
		// InnoDB's 50s): every wait in the lab is bounded by its client,
		// db-for-update's by its statement's max_statement_time, and a
		// wait left unbounded shows as one, not as a 50s stall.
		"--innodb-lock-wait-timeout=3600",
	}
	m.proc, err = proc.StartServer("mariadb", m.server, args, m.work, filepath.Join(m.dir, "mariadb.log"), syscall.SIGKILL)
	return err
}

// ready waits until the server serves (proc.ReadyOnFreePort: started again on
// another port if it exits while starting on the one start chose).
func (m *MariaDB) Ready(ctx context.Context) error {
	// The server ran its init file, password and all, before it took a
	// client: the file goes now, not at the stack's stop, which a
	// SIGKILL may never reach.
	defer m.removeFiles(m.initFile())
	return m.ready(ctx, m.serving, m.Start)
}

// initFile is the SQL the server runs at its start: the apps' account,
// with its password.
func (m *MariaDB) initFile() string { return filepath.Join(m.work, "init.sql") }

// serving waits until the server greets a connection (its handshake
// carries its version).
func (m *MariaDB) serving(ctx context.Context) error {
	return m.await(ctx, func() bool {
		v, err := mysqlGreeting(ctx, m.Addr())
		if err == nil {
			m.version = v
		}
		return err == nil
	})
}

// Stop kills the server, as a crash would: every connection ends at
// once, and none frees its row locks on the way down. Its own shutdown
// (SIGTERM) ends the connections one by one, each transaction rolled
// back as it goes, so a waiter not yet ended can be granted the row
// beside a holder still in its section: a double grant on the way down
// that no downtime can prevent (TestMariaDBStopGrantsNothing; its
// figures are in MEASUREMENTS.md). The data stays: InnoDB recovers it
// at the next start from its redo log, committed at every commit.
func (m *MariaDB) Stop() error {
	if m.proc == nil {
		return nil
	}
	err := m.proc.StopLeader(syscall.SIGKILL, proc.StopGrace)
	// Killed, it leaves its socket and pid file: the next start makes
	// them again.
	m.removeFiles(m.initFile(), m.socket(), m.pidFile())
	return err
}

// removeFiles removes files of its work dir, once there is one.
func (m *MariaDB) removeFiles(files ...string) {
	if m.work == "" {
		return
	}
	for _, f := range files {
		os.Remove(f)
	}
}

func (m *MariaDB) socket() string  { return filepath.Join(m.work, "mariadb.sock") }
func (m *MariaDB) pidFile() string { return filepath.Join(m.work, "mariadb.pid") }

func (m *MariaDB) Summary() string {
	v, _, _ := strings.Cut(m.version, "-")
	return fmt.Sprintf("mariadb: MariaDB %s on %s (pid %d)", v, m.Addr(), m.proc.Pid())
}

// mysqlGreeting reads the server's first packet (protocol 10 handshake)
// and returns the version string in it.
func mysqlGreeting(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	head := make([]byte, 4) // 3 bytes length, 1 sequence
	if _, err := r.Read(head); err != nil {
		return "", err
	}
	proto, err := r.ReadByte()
	if err != nil {
		return "", err
	}
	if proto != 10 {
		return "", fmt.Errorf("not a MySQL handshake (protocol %d)", proto)
	}
	v, err := r.ReadString(0)
	if err != nil {
		return "", err
	}
	v = v[:len(v)-1]
	if i := len("5.5.5-"); len(v) > i && v[:i] == "5.5.5-" { // MariaDB's prefix for old clients
		v = v[i:]
	}
	return v, nil
}

// currentUser is the user mariadbd runs as: the one running the stack.
func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return fmt.Sprint(os.Geteuid())
}
