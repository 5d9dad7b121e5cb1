package backends

import "github.com/lockladder/lockladder/stack/proc"

// Backend is a server the stack may start for a rung that is not Redis's:
// ZooKeeper (zookeeper.go), MariaDB (mariadb.go), etcd (etcd.go),
// PostgreSQL (postgres.go). Every
// instance is told where it is: by a flag, or where that holds a
// password, in its environment.
type Backend interface {
	proc.Server
	Kind() string // "zookeeper", "mariadb", "etcd"
	Summary() string
	ClientAddr() string // what a client is given, its credentials included: ZooKeeper's user:password@host:port, MariaDB's DSN, etcd's URL
	Flags() []string    // what the app is told on its command line (nothing secret: ps shows it)
	Env() []string      // and in its environment, where other users cannot read it: MySQLEnv=DSN
	Pid() int           // 0: in this process
	Remove() error      // after its last stop: the temp dirs it made (proc.ServerDir)
}

// MySQLEnv is the variable the app reads its MariaDB DSN from (-mysql's
// default): the stack passes the DSN, and its password, there, where
// other users cannot read it, and removes a value inherited from the
// caller's shell.
const MySQLEnv = "MYSQL_DSN"

func (e *Etcd) Kind() string { return "etcd" }

func (z *ZooKeeper) Flags() []string  { return nil }
func (z *ZooKeeper) Env() []string    { return []string{ZooKeeperEnv + "=" + z.ClientAddr()} }
func (m *MariaDB) ClientAddr() string { return m.DSN() }
func (m *MariaDB) Flags() []string    { return nil }
func (m *MariaDB) Env() []string      { return []string{MySQLEnv + "=" + m.DSN()} }
func (e *Etcd) Flags() []string       { return nil }
func (e *Etcd) Env() []string         { return []string{EtcdEnv + "=" + e.ClientAddr()} }
func (e *Etcd) Pid() int {
	if e.proc == nil {
		return 0
	}
	return e.proc.Pid()
}
