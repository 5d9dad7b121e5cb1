package lock

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGAdvisoryXact is PostgreSQL's transaction advisory lock through pgx
// v5: BEGIN; SELECT pg_try_advisory_xact_lock(id); the business (on
// Redis); COMMIT, which releases it. It differs from PGAdvisory by where
// the lock ends: no unlock to forget, and a connection given back can
// never carry the lock to another request (the transaction ends first).
// A busy lock is rolled back and tried again in the lab's wait loop.
//
// What it does not change: the transaction is still a session's. A
// session cut mid-section (a pooler, a failover, a network cut) aborts
// the transaction, and the server frees the lock at once; the holder
// learns it at COMMIT, after its Redis writes. The lock protects only
// what is written in the same transaction: a write to the same database
// inside it would be rolled back with the lock; a write elsewhere lands.
type PGAdvisoryXact struct {
	pool *pgxpool.Pool
}

var _ Rung = PGAdvisoryXact{}

// NewPGAdvisoryXact returns the transaction advisory lock over pool,
// waiting as o says (no lease).
func NewPGAdvisoryXact(pool *pgxpool.Pool, o Options) Locker {
	o.Notifier = nil
	return Poll(PGAdvisoryXact{pool: pool}, o)
}

// Try begins a transaction and takes the lock in it if it is free.
func (p PGAdvisoryXact) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	// The transaction is the lock: it must outlive the request's context
	// (a holder runs its business to the end even if its client goes).
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock: pg-advisory-xact: postgres: BEGIN: %w", err)
	}
	var ok bool
	if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", AdvisoryID(key)).Scan(&ok); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("lock: pg-advisory-xact: postgres: pg_try_advisory_xact_lock %s: %w", key, err)
	}
	if !ok {
		if err := tx.Rollback(ctx); err != nil {
			return nil, false, fmt.Errorf("lock: pg-advisory-xact: postgres: ROLLBACK: %w", err)
		}
		return nil, false, nil
	}
	return &pgXactLock{tx: tx, key: key}, true, nil
}

type pgXactLock struct {
	tx   pgx.Tx
	key  string
	once sync.Once
}

// Release commits, which releases the lock: ErrNotHeld when the session
// was cut under the holder (the transaction, and the lock, were gone).
func (l *pgXactLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		err = l.tx.Commit(ctx)
		if err != nil {
			err = pgReleaseError("pg-advisory-xact", "COMMIT", l.key, l.tx.Conn().IsClosed(), err)
			l.tx.Rollback(context.WithoutCancel(ctx))
		}
	})
	return err
}
