package lock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DBForUpdate is the database family's pessimistic lock (docs/ladder.md,
// "Beyond Redis"), as the articles' factory would have it with MySQL: a
// row per lock in a table, and the lock is the row lock of an open
// transaction: BEGIN; SELECT ... FOR UPDATE; the critical section;
// COMMIT. InnoDB queues the waiters on the row, first come first served,
// and wakes the next at the commit: no polling.
//
// What it shows: the lock is as available as one database, and costs a
// connection held open for the whole critical section. A holder that
// dies frees the lock when its connection drops (at once for a killed
// process: the kernel closes its socket); one that hangs with its
// connection open holds it until the database's own timeouts. It has no
// lease to lapse, so a paused holder keeps the lock, and everyone waits.
type DBForUpdate struct {
	db   *sql.DB
	wait time.Duration

	mu    sync.Mutex
	known map[string]bool // lock rows known to exist: at most maxKnownRows
}

// maxKnownRows bounds the lock rows a process remembers it has inserted.
// The rows stay (a row deleted under a waiter's SELECT would leave it no
// row to lock); what it forgets costs one INSERT IGNORE when next locked.
const maxKnownRows = 4096

// LocksTable is the table of lock rows, in the database the DSN names.
const LocksTable = "lockladder_locks"

// NewDBForUpdate returns the row-lock lock over db (MySQL or MariaDB).
// Options.Wait bounds a wait; wait modes and leases do not apply. It
// creates its table if it is missing.
func NewDBForUpdate(ctx context.Context, db *sql.DB, o Options) (*DBForUpdate, error) {
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+LocksTable+
		" (name VARCHAR(128) PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		return nil, fmt.Errorf("lock: db-for-update: create table: %w", err)
	}
	return &DBForUpdate{db: db, wait: o.WithDefaults().Wait, known: map[string]bool{}}, nil
}

// Obtain opens a transaction on a connection of its own and locks key's
// row (creating it first if need be), waiting at most the call's bound
// (try=0: NOWAIT).
//
// The bound covers the whole wait, not only the row's: every holder and
// every waiter keeps a connection of the pool, so under load a request
// may first wait for a free one, and without a deadline it would wait
// for as long as the client stays. try=0 gives the connection the
// Locker's bound: one attempt at the row, not none at a connection.
func (d *DBForUpdate) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound := c.Bound(d.wait)
	limit := bound
	if bound == 0 {
		limit = d.wait
	}
	deadline := time.Now().Add(limit)
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// notInTime says a wait before the row ran out of the bound (not the
	// caller's context: that is the caller's to report).
	notInTime := func(what string, err error) error {
		if pctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("%w: waited %s for %s: %w", ErrNotObtained, limit, what, err)
		}
		return fmt.Errorf("lock: db-for-update: %s: %w", what, err)
	}
	if err := d.ensureRow(pctx, key); err != nil {
		return nil, notInTime("the lock row "+key, err)
	}
	conn, err := d.db.Conn(pctx)
	if err != nil {
		return nil, notInTime("a connection", err)
	}
	// The transaction is the lock: it must outlive the request's context
	// (database/sql rolls a transaction back when its context ends), as
	// every lock here outlives a client that goes away mid-business.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("lock: db-for-update: begin: %w", err)
	}
	q := "SELECT name FROM " + LocksTable + " WHERE name = ? FOR UPDATE"
	qctx := ctx
	if bound == 0 {
		q += " NOWAIT"
	} else {
		// The context below ends the wait on time for us; the statement's
		// own bound (MariaDB's SET STATEMENT, in seconds to the
		// microsecond; 0 would mean none) ends it on the server at the same
		// moment. Left to the whole-second innodb_lock_wait_timeout, a wait
		// we gave up on stayed queued in InnoDB and could be granted the
		// row once its holder committed, until the server saw the
		// connection gone: the next request found it busy for nothing.
		// What the connection took comes off the row's wait.
		q = fmt.Sprintf("SET STATEMENT max_statement_time=%.6f FOR ", max(time.Until(deadline).Seconds(), 1e-6)) + q
		qctx = pctx
	}
	var name string
	err = tx.QueryRowContext(qctx, q, key).Scan(&name)
	switch {
	case err == nil:
		return &dbRowLock{tx: tx, conn: conn}, nil
	case bound == 0 && lockWaitError(err):
		err = ErrBusy
	case lockWaitError(err) || qctx.Err() != nil:
		err = fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, err)
	default:
		err = fmt.Errorf("lock: db-for-update: SELECT FOR UPDATE %s: %w", key, err)
	}
	tx.Rollback()
	conn.Close()
	return nil, err
}

// ensureRow inserts key's lock row the first time this process sees key,
// or the first time since it forgot the rows it knew (maxKnownRows).
func (d *DBForUpdate) ensureRow(ctx context.Context, key string) error {
	d.mu.Lock()
	ok := d.known[key]
	d.mu.Unlock()
	if ok {
		return nil
	}
	if _, err := d.db.ExecContext(ctx, "INSERT IGNORE INTO "+LocksTable+" (name) VALUES (?)", key); err != nil {
		return err
	}
	d.mu.Lock()
	if len(d.known) >= maxKnownRows {
		clear(d.known)
	}
	d.known[key] = true
	d.mu.Unlock()
	return nil
}

// lockWaitError reports a lock wait that ran out (1205, or 1969: the
// statement's max_statement_time) or a NOWAIT that found the row locked
// (1205 or 3572 in MySQL; MariaDB answers 1205).
func lockWaitError(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "1205") || strings.Contains(s, "3572") || strings.Contains(s, "1969") || errors.Is(err, context.DeadlineExceeded)
}

type dbRowLock struct {
	tx   *sql.Tx
	conn *sql.Conn
	once sync.Once
}

// Release commits the transaction (the row lock goes with it) and gives
// the connection back.
func (l *dbRowLock) Release(context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		err = l.tx.Commit()
		if err != nil {
			err = fmt.Errorf("lock: db-for-update: commit: %w", err)
		}
		l.conn.Close()
	})
	return err
}
