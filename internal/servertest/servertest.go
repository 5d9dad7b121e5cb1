// Package servertest starts, for a test, the back ends of the rungs that
// are not Redis's (ZooKeeper, MariaDB, etcd) as the stack does, on free
// loopback ports, stopped when the test ends. Where one is not installed
// the test is skipped and says so, except under CI=true, where a missing
// server fails it: CI proves the real thing. (etcd falls back to an
// embedded server where the etcd binary is missing, outside CI.)
package servertest

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// start starts kind and returns its address, or skips (fails in CI).
func start(t testing.TB, kind string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, stop, err := stack.StartBackend(ctx, kind, stack.Auto, redistest.CI(), t.TempDir())
	if err != nil {
		if redistest.CI() {
			t.Fatalf("start %s: %v", kind, err)
		}
		t.Skipf("%s not available: %v", kind, err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop %s: %v", kind, err)
		}
	})
	return addr
}

// ZooKeeper returns a session (timeout sessionTimeout) on a fresh
// ZooKeeper server, and the server's address.
func ZooKeeper(t testing.TB, sessionTimeout time.Duration) (*zk.Conn, string) {
	t.Helper()
	addr := start(t, "zookeeper")
	return ZooKeeperSession(t, addr, sessionTimeout), addr
}

// ZooKeeperSession opens one more session on the ZooKeeper at addr,
// closed when the test ends (one session per process, as the app has).
func ZooKeeperSession(t testing.TB, addr string, sessionTimeout time.Duration) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no ZooKeeper session on %s after 10s (state %s)", addr, conn.State())
		}
	}
	return conn
}

// Etcd returns a client to a fresh etcd.
func Etcd(t testing.TB) *clientv3.Client {
	t.Helper()
	url := start(t, "etcd")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
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
	db, err := Database(dsn, "lockladder_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Database creates database name on the server of dsn (a DSN without a
// database) and returns a pool on it.
func Database(dsn, name string) (*sql.DB, error) {
	root, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if _, err := root.Exec("CREATE DATABASE IF NOT EXISTS " + name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(200)
	return db, nil
}

// quiet drops go-zookeeper's log lines (connected, reconnecting...).
type quiet struct{}

func (quiet) Printf(format string, args ...any) {
	if strings.Contains(format, "error") || strings.Contains(format, "failed") {
		log.Printf("zk: "+format, args...)
	}
}
