package appwire

import (
	"context"
	"log/slog"
	"time"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock/ladder"
)

// others connects to the servers of the rungs that are not Redis's: each
// one given (a flag not empty) that answers within a few seconds. One that
// does not is logged and left out: its rungs answer 503 naming it, and
// the rest serve. It returns what to close when the app ends.
func others(log *slog.Logger, b *ladder.Backends, s Servers) (optimistic *inventory.DBStore, closeAll func()) {
	zkAddr, etcdURL, dsn, lease, wait := s.ZooKeeper, s.Etcd, s.MySQL, s.Lease, s.Wait
	var closers []func()
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	b.Down = map[string]error{}
	down := func(server string, err error) {
		log.Warn("back end unreachable: its rungs answer 503", "server", server, "err", err)
		b.Down[server] = err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if zkAddr != "" {
		// The session is the lease: it ends lease after the process
		// stops answering, and its znodes (the locks it holds) with it.
		if conn, err := backend.ZooKeeper(ctx, zkAddr, lease); err != nil {
			down("zookeeper", err)
		} else {
			b.ZooKeeper, closers = conn, append(closers, conn.Close)
		}
	}
	if etcdURL != "" {
		if cli, err := backend.Etcd(ctx, etcdURL); err != nil {
			down("etcd", err)
		} else {
			b.Etcd, closers = cli, append(closers, func() { cli.Close() })
		}
	}
	if dsn != "" {
		db, err := backend.MySQL(ctx, dsn, backend.Database, backend.MySQLPool)
		if err == nil {
			optimistic, err = inventory.NewDBStore(ctx, db, wait)
		}
		if err != nil {
			if db != nil {
				db.Close()
			}
			down("mariadb", err)
		} else {
			b.DB, closers = db, append(closers, func() { db.Close() })
		}
	}
	if s.Postgres != "" {
		if pool, err := backend.Postgres(ctx, s.Postgres, backend.PostgresPool); err != nil {
			down("postgres", err)
		} else {
			b.Postgres, closers = pool, append(closers, pool.Close)
		}
	}
	return optimistic, closeAll
}
