// Package servertest starts, for a test, the back ends of the rungs that
// are not Redis's (ZooKeeper, MariaDB, etcd, PostgreSQL) as the stack does, on free
// loopback ports, stopped when the test ends. Where one is not installed
// the test is skipped and says so, except under CI=true, where a missing
// server fails it: CI proves the real thing. (etcd falls back to an
// embedded server where the etcd binary is missing, outside CI.)
package servertest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// start starts kind and returns its address, or skips (fails in CI).
func start(t testing.TB, kind string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop, err := stack.StartBackend(ctx, kind, stack.Auto, redistest.CI(), t.TempDir())
	need.Real(t, kind, err)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop %s: %v", kind, err)
		}
	})
	return addr
}

// ZooKeeper returns a session (timeout sessionTimeout) on a fresh
// ZooKeeper server, carrying the lab's credentials, and the server's
// address with them (user:password@host:port: backend.ParseZooKeeper).
func ZooKeeper(t testing.TB, sessionTimeout time.Duration) (*zk.Conn, string) {
	t.Helper()
	addr := start(t, "zookeeper")
	return ZooKeeperSession(t, addr, sessionTimeout), addr
}

// ZooKeeperSession opens one more session on the ZooKeeper at addr,
// closed when the test ends (one session per process, as the app has).
func ZooKeeperSession(t testing.TB, addr string, sessionTimeout time.Duration) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := backend.ZooKeeper(ctx, addr, sessionTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// Etcd returns a client to a fresh etcd, logged in as the lab's user.
func Etcd(t testing.TB) *clientv3.Client {
	t.Helper()
	url := start(t, "etcd")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := backend.Etcd(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// MariaDB returns a pool on a fresh database of a fresh MariaDB server.
func MariaDB(t testing.TB) *sql.DB {
	t.Helper()
	dsn := start(t, "mariadb")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := backend.MySQL(ctx, dsn, "lockladder_test", 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Postgres returns a pool on the apps' database of a fresh PostgreSQL
// server (pgx v5), and the server's DSN (the apps' role, password and
// all), for a control connection of the test's own.
func Postgres(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := start(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := backend.Postgres(ctx, dsn, 32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, dsn
}
