package lock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGAdvisory is PostgreSQL's session advisory lock through pgx v5, the
// lock Go services that already run PostgreSQL reach for: take a
// connection from the pool, SELECT pg_try_advisory_lock(id), the
// business (here, on Redis), SELECT pg_advisory_unlock(id), give the
// connection back. A busy lock is tried again in the lab's wait loop
// (Poll: by default one request per process tries, woken every 2ms),
// which borrows a connection per try; pg_advisory_lock would queue
// every waiter on the server, each holding a connection of the pool.
//
// What it shows: the lock belongs to the session, not to the code that
// took it. It has no lease: a slow business keeps it, a frozen process
// keeps it (its connection lives on: everyone waits), a dead process
// frees it (the kernel closes its socket, the server ends the session).
// But a session can end under a holder that goes on: a pooler that
// recycles a server connection it thinks idle (pgbouncer's
// server_idle_timeout, the holder is idle on the server while its
// business runs elsewhere), a failover, a network cut, an
// idle_session_timeout, a DBA's pg_terminate_backend. The server frees
// the lock at once and the next holder enters; the first learns it only
// at its next query, its unlock, after its write has landed. Only a
// fencing token the storage checks (PGAdvisoryFenced), or a write in the
// same session's transaction, saves it.
type PGAdvisory struct {
	pool *pgxpool.Pool
}

var _ Rung = PGAdvisory{}

// NewPGAdvisory returns the session advisory lock over pool, waiting as o
// says (Options.TTL does not apply: there is no lease).
func NewPGAdvisory(pool *pgxpool.Pool, o Options) Locker {
	o.Notifier = nil // nothing announces a PostgreSQL lock's release
	return Poll(PGAdvisory{pool: pool}, o)
}

// AdvisoryID is the advisory lock's bigint for key: the first 8 bytes of
// FNV-1a, as two keys of the lab could not collide in practice.
func AdvisoryID(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// Try takes a connection and, on it, the lock if it is free.
func (p PGAdvisory) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock: pg-advisory: postgres: a connection: %w", err)
	}
	id := AdvisoryID(key)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", id).Scan(&ok); err != nil {
		// The server may have granted it before the error: ending the
		// session frees whatever it holds.
		discard(conn)
		return nil, false, fmt.Errorf("lock: pg-advisory: postgres: pg_try_advisory_lock %s: %w", key, err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return &pgAdvisoryLock{conn: conn, id: id, key: key}, true, nil
}

type pgAdvisoryLock struct {
	conn *pgxpool.Conn
	id   int64
	key  string
	once sync.Once
}

// Release unlocks on the holder's session and gives the connection back:
// ErrNotHeld when the session was cut under the holder (the server had
// freed the lock, and perhaps granted it again), or when the server says
// the session did not hold it.
func (l *pgAdvisoryLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		var ok bool
		err = l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.id).Scan(&ok)
		switch {
		case err != nil:
			err = pgReleaseError("pg-advisory", "pg_advisory_unlock", l.key, l.conn.Conn().IsClosed(), err)
			discard(l.conn)
		case !ok:
			err = fmt.Errorf("%w: pg-advisory: pg_advisory_unlock %s: the session did not hold it", ErrNotHeld, l.key)
			l.conn.Release()
		default:
			l.conn.Release()
		}
	})
	return err
}

// discard ends conn's session instead of giving it back to the pool: a
// session the lab cannot vouch for must not carry a lock to the next
// request that borrows it.
func discard(conn *pgxpool.Conn) {
	c := conn.Hijack()
	c.Close(context.Background())
}

// pgReleaseError is a release that failed: ErrNotHeld when the session
// is gone (terminated by the server, admin_shutdown 57P01, or the
// connection closed), which freed the lock under its holder.
func pgReleaseError(rung, stmt, key string, closed bool, err error) error {
	var pe *pgconn.PgError
	if closed || (errors.As(err, &pe) && pe.Code == "57P01") {
		return fmt.Errorf("%w: %s: %s %s: its session was cut, and the server freed the lock with it: %w", ErrNotHeld, rung, stmt, key, err)
	}
	return fmt.Errorf("lock: %s: postgres: %s %s: %w", rung, stmt, key, err)
}
