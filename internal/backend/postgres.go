package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockladder/lockladder/fault"
)

// PostgresPool is the most connections one app instance opens to
// PostgreSQL. A pg-advisory holder keeps one for its whole section; a
// waiter borrows one per try (the head of each process's line, or every
// request under wait=fixed). The stack's three instances together (96)
// stay under its server's max_connections (200, stack/backends/postgres.go).
const PostgresPool = 32

// Postgres returns a pool on the PostgreSQL of dsn (a URL,
// postgres://user:password@127.0.0.1:5432/db), once the server answers.
// Its errors never quote the DSN: its password would end up in a log.
func Postgres(ctx context.Context, dsn string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN: %w", redactPG(err))
	}
	cfg.MaxConns = maxConns
	// A connection cut under a holder is found dead by its next query;
	// the pool's health check would only find it sooner.
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	// Every session is named for what borrows it (fault.Session): the
	// lab cuts only an armed holder's (CutAdvisoryHolders). A connection
	// is renamed only when it passes between a plain and an armed
	// request; the server reports the name back (a ParameterStatus), so
	// a plain request on a plain connection costs nothing.
	cfg.ConnConfig.RuntimeParams["application_name"] = fault.PlainSession
	cfg.PrepareConn = nameSession
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return pool, nil
}

// nameSession names conn's session as fault.Session says for ctx, the
// context of the request that borrows it.
func nameSession(ctx context.Context, conn *pgx.Conn) (bool, error) {
	name := fault.Session(ctx)
	if conn.PgConn().ParameterStatus("application_name") == name {
		return true, nil
	}
	if _, err := conn.Exec(ctx, "SELECT set_config('application_name', $1, false)", name); err != nil {
		return false, fmt.Errorf("postgres: name the session: %w", err)
	}
	return true, nil
}

// redactPG drops a parse error's detail, which may quote the DSN.
func redactPG(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cannot parse it (the DSN is not quoted: it holds a password)")
}

// CutAdvisoryHolders terminates, from a connection of its own (conn), the
// server sessions named fault.ArmedSession (an armed request's: no other
// holder is the fault's victim) that hold a granted advisory lock and
// have been idle, or idle in their transaction, for at least idle: a
// holder inside its
// critical section, doing its business elsewhere. It is what a pooler
// that recycles an idle server connection, a failover or a network cut
// does to such a holder: the server frees the lock with the session, and
// the holder learns it only at its next query. It returns how many
// sessions it cut. The caller's role must be the holders' (or a member of
// pg_signal_backend).
func CutAdvisoryHolders(ctx context.Context, conn *pgx.Conn, idle time.Duration) (int, error) {
	cut, err := CutAdvisoryHoldersBut(ctx, conn, idle, nil)
	return len(cut), err
}

// CutAdvisoryHoldersBut is CutAdvisoryHolders sparing the sessions of
// pids (those cut already: a terminated backend stays in the server's
// tables until it has exited, and a second look would count it again),
// and returns the pids it cut.
func CutAdvisoryHoldersBut(ctx context.Context, conn *pgx.Conn, idle time.Duration, pids []uint32) ([]uint32, error) {
	if pids == nil {
		pids = []uint32{}
	}
	rows, err := conn.Query(ctx, `
		SELECT a.pid, pg_terminate_backend(a.pid)
		FROM pg_stat_activity a
		WHERE a.pid <> pg_backend_pid()
		  AND a.application_name = $2
		  AND a.state IN ('idle', 'idle in transaction')
		  AND now() - a.state_change >= make_interval(secs => $1)
		  AND NOT (a.pid = ANY($3::int4[]))
		  AND EXISTS (SELECT 1 FROM pg_locks l
		              WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)`,
		idle.Seconds(), fault.ArmedSession, pids)
	if err != nil {
		return nil, fmt.Errorf("postgres: cut advisory holders: %w", err)
	}
	var cut []uint32
	for rows.Next() {
		var pid int32
		var ok bool
		if err := rows.Scan(&pid, &ok); err != nil {
			return cut, err
		}
		if ok {
			cut = append(cut, uint32(pid))
		}
	}
	return cut, rows.Err()
}
