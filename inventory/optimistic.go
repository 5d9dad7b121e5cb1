package inventory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// DBStore keeps the stock, the sold counter and num in a database table
// with a version column: the db-optimistic rung (docs/ladder.md, "Beyond
// Redis"), the articles' optimistic lock. There is no lock at all: a sale
// reads the row and its version, and writes back only if the version is
// still the one it read (UPDATE ... WHERE version = ?); when another write
// got there first, no row matches and it reads again. Safe, as a
// compare-and-set is; under contention most tries lose and retry (the
// cost, not the safety). A try that lost sleeps a random while before the
// next, up to twice as long each time it loses again (full jitter, 1 ms
// doubling to 64 ms): without it, a hundred buyers who all read the same
// version all try again at once, and almost every try is wasted.
//
// Even so, a hundred writers on one row mostly lose (wait=backoff: about
// 250 to 430 increments a second through the lab's nginx, p99 over 1.5s,
// and a few requests that lost every try for 5s). So by default
// (wait=queue) a process's operations line up in memory, first come
// first served, and only the head of the line reads and writes: three
// instances put three writers on the row, not a hundred. The version
// check still decides; the line only thins the crowd (1112 to 1263 a
// second, p99 238 to 323ms, none given up).
type DBStore struct {
	db   *sql.DB
	wait time.Duration
	line chan struct{} // the head of this process's line holds its one slot
}

// InventoryTable is the table DBStore keeps its one row in.
const InventoryTable = "lockladder_inventory"

// ErrContended means an optimistic operation lost to other writers every
// time it tried, for as long as it was allowed to: nothing was written.
var ErrContended = errors.New("inventory: contended: every try lost to another writer")

// NewDBStore returns the database inventory over db, creating its table
// and row when they are missing; an operation retries for at most wait.
func NewDBStore(ctx context.Context, db *sql.DB, wait time.Duration) (*DBStore, error) {
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS " + InventoryTable + " (id BIGINT PRIMARY KEY, stock BIGINT NOT NULL, " +
			"sold BIGINT NOT NULL, num BIGINT NOT NULL, version BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO " + InventoryTable + " VALUES (1, 0, 0, 0, 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("inventory: database: %w", err)
		}
	}
	return &DBStore{db: db, wait: wait, line: make(chan struct{}, 1)}, nil
}

// SellOptimistic sells one item: read stock and version, check, write
// stock-1 (and sold+1) where the version is still ours, again until one
// write lands. It returns the stock left, ErrSoldOut or ErrContended.
// line says whether it waits in this process's line (wait=queue, the
// default) or tries on its own (wait=backoff).
func (s *DBStore) SellOptimistic(ctx context.Context, scope string, line bool) (int64, error) {
	return s.retry(ctx, scope, line, func(stock, num int64) (string, int64, error) {
		if stock <= 0 {
			return "", 0, ErrSoldOut
		}
		return "stock = stock - 1, sold = sold + 1", stock - 1, nil
	})
}

// IncrOptimistic adds one to num the same way, and returns it.
func (s *DBStore) IncrOptimistic(ctx context.Context, scope string, line bool) (int64, error) {
	return s.retry(ctx, scope, line, func(stock, num int64) (string, int64, error) {
		return "num = num + 1", num + 1, nil
	})
}

// retry reads the row, asks change what to set (and what the caller gets),
// and writes it with the version check, until a write lands or the wait
// ends. The SET clause is relative to the row but guarded by the version:
// exactly what was read is what is changed.
func (s *DBStore) retry(ctx context.Context, scope string, line bool, change func(stock, num int64) (set string, result int64, err error)) (int64, error) {
	id, err := rowOf(scope)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.wait)
	defer cancel()
	if line {
		// Go hands a freed slot to the sender that has waited longest:
		// the line is first come, first served.
		select {
		case s.line <- struct{}{}:
			defer func() { <-s.line }()
		case <-ctx.Done():
			return 0, s.failed(ctx, 0, ctx.Err())
		}
	}
	tries := 0
	pause := firstPause
	for {
		if tries > 0 {
			// Full jitter: a random while up to pause, which doubles.
			if err := sleep(ctx, rand.N(pause)); err != nil {
				return 0, s.failed(ctx, tries, err)
			}
			pause = min(2*pause, lastPause)
		}
		tries++
		var stock, num, version int64
		err := s.db.QueryRowContext(ctx, "SELECT stock, num, version FROM "+InventoryTable+" WHERE id = ?", id).
			Scan(&stock, &num, &version)
		if err != nil {
			return 0, s.failed(ctx, tries, err)
		}
		set, result, err := change(stock, num)
		if err != nil {
			return 0, err
		}
		res, err := s.db.ExecContext(ctx, "UPDATE "+InventoryTable+" SET "+set+", version = version + 1 WHERE id = ? AND version = ?", id, version)
		if err != nil {
			return 0, s.failed(ctx, tries, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return result, nil
		}
	}
}

// The pause after a lost try, as the waiting rungs' exponential backoff
// with full jitter: up to firstPause, doubling to lastPause.
const (
	firstPause = time.Millisecond
	lastPause  = 64 * time.Millisecond
)

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *DBStore) failed(ctx context.Context, tries int, err error) error {
	if ctx.Err() != nil && tries == 0 {
		return fmt.Errorf("%w (%s in this process's line, no try)", ErrContended, s.wait)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%d tries in %s)", ErrContended, tries, s.wait)
	}
	return fmt.Errorf("inventory: database: %w", err)
}

// Snapshot reads the stock, sold and num of the lab's row (scope "") or
// a run's.
func (s *DBStore) Snapshot(ctx context.Context, scope string) (Snapshot, error) {
	id, err := rowOf(scope)
	if err != nil {
		return Snapshot{}, err
	}
	var snap Snapshot
	err = s.db.QueryRowContext(ctx, "SELECT stock, sold, num FROM "+InventoryTable+" WHERE id = ?", id).
		Scan(&snap.Stock, &snap.Sold, &snap.Num)
	if errors.Is(err, sql.ErrNoRows) {
		return Snapshot{}, fmt.Errorf("inventory: database: no row of %s: the run never reset it", scope)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("inventory: database: %w", err)
	}
	return snap, nil
}

// Reset sets the stock and zeroes sold and num of the lab's row (scope
// "") or a run's, which it makes.
func (s *DBStore) Reset(ctx context.Context, scope string, stock int64) error {
	id, err := rowOf(scope)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, "INSERT INTO "+InventoryTable+" VALUES (?, ?, 0, 0, 0) "+
		"ON DUPLICATE KEY UPDATE stock = VALUES(stock), sold = 0, num = 0, version = version + 1", id, stock)
	if err != nil {
		return fmt.Errorf("inventory: database: %w", err)
	}
	return nil
}

// Drop deletes the rows of runs' scopes: what a run left behind once
// it ended.
func (s *DBStore) Drop(ctx context.Context, scopes ...string) error {
	for _, scope := range scopes {
		id, err := rowOf(scope)
		if err != nil || id == labRow {
			continue
		}
		if _, err := s.db.ExecContext(ctx, "DELETE FROM "+InventoryTable+" WHERE id = ?", id); err != nil {
			return fmt.Errorf("inventory: database: %w", err)
		}
	}
	return nil
}

// labRow is the row of the lab's item; a run's scope "runN" keeps its
// counters in row N+1.
const labRow = 1

// rowOf is the row of scope's counters.
func rowOf(scope string) (int64, error) {
	if scope == "" {
		return labRow, nil
	}
	n, ok := strings.CutPrefix(scope, "run")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 1 || seq >= math.MaxInt64-labRow {
		return 0, fmt.Errorf("inventory: %q is not a run's scope", scope)
	}
	return seq + labRow, nil
}

// Ping checks that the database answers.
func (s *DBStore) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("inventory: database: %w", err)
	}
	return nil
}
