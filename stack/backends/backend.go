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
	ClientAddr() string // what a client is given: ZooKeeper's host:port, MariaDB's DSN, etcd's URL
	Flags() []string    // what the app is told on its command line: -zookeeper ADDR, say
	Env() []string      // and in its environment: MySQLEnv=DSN
	Pid() int           // 0: in this process
	Remove() error      // after its last stop: the temp dirs it made (proc.ServerDir)
}

// MySQLEnv is the variable the app reads its MariaDB DSN from (-mysql's
// default): the stack passes the DSN, and its password, there, where
// other users cannot read it, and removes a value inherited from the
// caller's shell.
const MySQLEnv = "MYSQL_DSN"

func (e *Etcd) Kind() string { return "etcd" }

func (z *ZooKeeper) ClientAddr() string { return z.Addr() }
func (z *ZooKeeper) Flags() []string    { return []string{"-zookeeper", z.Addr()} }
func (z *ZooKeeper) Env() []string      { return nil }
func (m *MariaDB) ClientAddr() string   { return m.DSN() }
func (m *MariaDB) Flags() []string      { return nil }
func (m *MariaDB) Env() []string        { return []string{MySQLEnv + "=" + m.DSN()} }
func (e *Etcd) ClientAddr() string      { return e.client }
func (e *Etcd) Flags() []string         { return []string{"-etcd", e.client} }
func (e *Etcd) Env() []string           { return nil }
func (e *Etcd) Pid() int {
	if e.proc == nil {
		return 0
	}
	return e.proc.Pid()
}
