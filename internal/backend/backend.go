// Package backend connects to the servers of the rungs that are not
// Redis's: a ZooKeeper session, an etcd client, a MariaDB pool. The app
// and the tests connect the same way.
package backend

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/url"
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
// addr, [user:password@]host:port, and waits, until ctx ends, for the
// server to grant it. With a user and password the session carries them
// (digest auth; the client sends them again after every reconnect): the
// stack's ZooKeeper lets only them read or write the lab's znodes,
// which the rungs create readable and writable by their creator alone.
// Errors never quote the password.
func ZooKeeper(ctx context.Context, addr string, sessionTimeout time.Duration) (*zk.Conn, error) {
	host, user, password := ParseZooKeeper(addr)
	conn, events, err := zk.Connect([]string{host}, sessionTimeout, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", host, err)
	}
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-ctx.Done():
			state := conn.State()
			conn.Close()
			return nil, fmt.Errorf("zookeeper %s: no session (state %s): %w", host, state, ctx.Err())
		}
	}
	if user != "" {
		if err := conn.AddAuth("digest", []byte(user+":"+password)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("zookeeper %s: auth as %s: %w", host, user, err)
		}
	}
	return conn, nil
}

// ParseZooKeeper splits a ZooKeeper address, [user:password@]host:port,
// into its host:port and its credentials ("" when it has none).
func ParseZooKeeper(addr string) (host, user, password string) {
	cred, host, ok := strings.Cut(addr, "@")
	if !ok {
		return addr, "", ""
	}
	user, password, _ = strings.Cut(cred, ":")
	return host, user, password
}

// ZooKeeperAddr is the address ZooKeeper reads: host:port with the
// credentials, user:password@host:port (host alone when user is "").
func ZooKeeperAddr(host, user, password string) string {
	if user == "" {
		return host
	}
	return user + ":" + password + "@" + host
}

// Etcd returns a client to the etcd at rawURL, once it answers. Its
// credentials, if any, are the URL's (http://user:password@host:port):
// the client logs in with them (etcdAuth: again after the server
// restarts), and the stack's etcd lets only them read or write the lab's
// keys. Errors never quote the password.
func Etcd(ctx context.Context, rawURL string) (*clientv3.Client, error) {
	endpoint, user, password, err := ParseEtcd(rawURL)
	if err != nil {
		return nil, err
	}
	cfg := clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second}
	var auth *etcdAuth
	if user != "" {
		auth = newEtcdAuth(user, password)
		cfg.DialOptions = auth.dialOptions()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", endpoint, err)
	}
	if auth != nil {
		auth.cli = cli
	}
	if _, err := cli.Get(ctx, EtcdHealthKey); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s: %w", endpoint, err)
	}
	return cli, nil
}

// EtcdHealthKey is the key Etcd reads to know the server answers (and
// lets it in): under the lab's prefix, which its user may read.
const EtcdHealthKey = "/lockladder/health"

// ParseEtcd splits an etcd client URL into the endpoint the client dials
// and the credentials in it ("" when it has none).
func ParseEtcd(rawURL string) (endpoint, user, password string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url's error quotes the URL, password and all.
		return "", "", "", errors.New("etcd: the URL does not parse (want http://[user:password@]host:port)")
	}
	if u.User != nil {
		user = u.User.Username()
		password, _ = u.User.Password()
		u.User = nil
	}
	return u.String(), user, password, nil
}

// EtcdURL is an etcd client URL with the credentials in it
// (http://user:password@host:port; endpoint alone when user is "").
func EtcdURL(endpoint, user, password string) string {
	u, err := url.Parse(endpoint)
	if err != nil || user == "" {
		return endpoint
	}
	u.User = url.UserPassword(user, password)
	return u.String()
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
