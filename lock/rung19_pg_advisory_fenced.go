package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGAdvisoryFenced is PGAdvisory plus the one fix that makes a cut
// session harmless: once the lock is held, the holder draws a fencing
// token on the same session, SELECT nextval(PGFenceSequence), and the
// write carries it (the stock refuses a token lower than the highest it
// has seen, as for fenced). A sequence only grows, and the next holder
// can draw only after the server freed the lock, so after the cut
// session's draw: the cut holder's late write carries the lower token
// and is refused.
type PGAdvisoryFenced struct {
	PGAdvisory
}

var _ Rung = PGAdvisoryFenced{}

// PGFenceSequence is the sequence the fencing tokens are drawn from.
const PGFenceSequence = "lockladder_fence"

// NewPGAdvisoryFenced returns the fenced session advisory lock over pool.
func NewPGAdvisoryFenced(pool *pgxpool.Pool, o Options) Locker {
	o.Notifier = nil
	return Poll(PGAdvisoryFenced{PGAdvisory{pool: pool}}, o)
}

// Try takes the lock as PGAdvisory does, then draws its token.
func (p PGAdvisoryFenced) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	l, ok, err := p.PGAdvisory.Try(ctx, key, c)
	if !ok || err != nil {
		return nil, ok, err
	}
	held := l.(*pgAdvisoryLock)
	token, err := p.draw(ctx, held.conn)
	if err != nil {
		held.Release(context.WithoutCancel(ctx))
		return nil, false, fmt.Errorf("lock: pg-advisory-fenced: postgres: nextval: %w", err)
	}
	return &pgFencedLock{pgAdvisoryLock: held, token: token}, true, nil
}

// draw returns the next token, making the sequence the first time.
func (p PGAdvisoryFenced) draw(ctx context.Context, conn *pgxpool.Conn) (int64, error) {
	var token int64
	err := conn.QueryRow(ctx, "SELECT nextval('"+PGFenceSequence+"')").Scan(&token)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		// Instances starting together may race to create it: the
		// loser's duplicate (23505) is as good as its own.
		_, err = conn.Exec(ctx, "CREATE SEQUENCE IF NOT EXISTS "+PGFenceSequence)
		if errors.As(err, &pe) && pe.Code == "23505" {
			err = nil
		}
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT nextval('"+PGFenceSequence+"')").Scan(&token)
		}
	}
	return token, err
}

type pgFencedLock struct {
	*pgAdvisoryLock
	token int64
}

// Token is the fencing token drawn on the holder's session.
func (l *pgFencedLock) Token() int64 { return l.token }
