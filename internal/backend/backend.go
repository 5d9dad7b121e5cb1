// Package backend connects to the servers of the rungs that are not
// Redis's: a ZooKeeper session, an etcd client, a MariaDB pool. The app
// and the tests connect the same way.
package backend

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Database is the database the app keeps its tables in.
const Database = "lockladder"

// MySQLPool is the most connections one app instance opens to MariaDB.
// db-for-update keeps one per holder and per waiter, so it bounds how
// many of an instance's requests wait on the database at once (the rest
// wait for a connection, within their bound). The stack's three
// instances together (450) stay under its server's max_connections (500,
// stack/backends/mariadb.go), with room for the tests and tools beside them.
const MySQLPool = 150

// ZooKeeper opens a session (timeout sessionTimeout) on the ZooKeeper at
// addr and waits, until ctx ends, for the server to grant it.
func ZooKeeper(ctx context.Context, addr string, sessionTimeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", addr, err)
	}
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-ctx.Done():
			state := conn.State()
			conn.Close()
			return nil, fmt.Errorf("zookeeper %s: no session (state %s): %w", addr, state, ctx.Err())
		}
	}
	return conn, nil
}

// Etcd returns a client to the etcd at url, once it answers.
func Etcd(ctx context.Context, url string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", url, err)
	}
	if _, err := cli.Status(ctx, url); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s: %w", url, err)
	}
	return cli, nil
}

// MySQL creates database name on the server of dsn (a DSN without a
// database, user:password@tcp(127.0.0.1:3306)/ say) and returns a pool on
// it of at most maxOpen connections. Its errors never quote the DSN: its
// password would end up in a log.
func MySQL(ctx context.Context, dsn, name string, maxOpen int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql DSN: %w", err)
	}
	root, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if _, err := root.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+name); err != nil {
		return nil, fmt.Errorf("mariadb %s: create database %s: %w", cfg.Addr, name, err)
	}
	cfg.DBName = name
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	return db, nil
}

// quiet drops go-zookeeper's routine log lines (connected,
// reconnecting...) and keeps its errors.
type quiet struct{}

func (quiet) Printf(format string, args ...any) {
	if strings.Contains(format, "error") || strings.Contains(format, "failed") {
		log.Printf("zk: "+format, args...)
	}
}
