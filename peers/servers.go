package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// startMasters starts the Redlock contenders' five independent masters.
func startMasters(ctx context.Context, mode stack.Mode, requireReal bool, password string) ([]*redisfam.Server, error) {
	var ms []*redisfam.Server
	for range 5 {
		m, err := redisfam.StartAuth(ctx, "127.0.0.1:0", mode, requireReal, password, nil)
		if err != nil {
			for _, x := range ms {
				x.Stop()
			}
			return nil, fmt.Errorf("start a master: %w", err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// redisVersion asks the server at addr for its version (INFO server).
func redisVersion(ctx context.Context, addr, password string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", io.EOF
}

// pgServer is the PostgreSQL of the pg-advisory contenders, started the
// first time one of them runs (stack.StartBackend: a loopback port, a
// password of its own, its data in a temporary directory), so that a run
// without them starts none.
type pgServer struct {
	requireReal bool

	once sync.Once
	pool *pgxpool.Pool
	stop func() error
	dir  string
	err  error
}

// get starts the server and a pool on it the first time.
func (p *pgServer) get(ctx context.Context) (*pgxpool.Pool, error) {
	p.once.Do(func() {
		if p.dir, p.err = os.MkdirTemp("", "peers-postgres-"); p.err != nil {
			return
		}
		var dsn string
		dsn, p.stop, p.err = stack.StartBackend(ctx, "postgres", stack.Auto, p.requireReal, p.dir)
		if p.err != nil {
			p.err = fmt.Errorf("start postgres: %w (%s)", p.err, stack.Install("postgres"))
			return
		}
		// The app's pool: what one instance opens.
		p.pool, p.err = backend.Postgres(ctx, dsn, backend.PostgresPool)
	})
	return p.pool, p.err
}

// close stops the pool and the server, if they were started.
func (p *pgServer) close() {
	if p.pool != nil {
		p.pool.Close()
	}
	if p.stop != nil {
		p.stop()
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}
