// Package backends starts the servers of the rungs that are not Redis's,
// each a file of its own behind one shape (Backend, a proc.Server that
// also says how a client reaches it): ZooKeeper (zookeeper.go), etcd,
// real or embedded in this process (etcd.go), MariaDB (mariadb.go) and
// PostgreSQL (postgres.go). Each keeps its data where a proc.DataRoot
// says, runs as proc.ServerUser when the stack runs as root, and takes
// a password made for it (NewPassword). It builds on stack/proc and
// never imports stack, which decides which of them a stack runs.
package backends
