package backends

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/proc"
)

// launch starts s for the test; it is stopped and removed at the test's
// end.
func launch[S interface {
	proc.Server
	Remove() error
}](t *testing.T, s S) S {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := proc.Launch(ctx, s); err != nil {
		s.Remove()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		s.Remove()
	})
	return s
}

func launchPostgres(t *testing.T) *Postgres {
	bin, err := FindPostgres()
	need.Real(t, "postgres", err)
	return launch(t, NewPostgres(bin, "127.0.0.1", t.TempDir(), t.TempDir(), proc.NewLogger(nil)))
}

func launchMariaDB(t *testing.T) *MariaDB {
	server, install, err := FindMariaDB()
	need.Real(t, "mariadb", err)
	return launch(t, NewMariaDB(server, install, "127.0.0.1", t.TempDir(), t.TempDir(), proc.NewLogger(nil)))
}

// TestPostgresStopsByItselfWithAClient: Stop ends PostgreSQL by its own
// shutdown even while a client is connected (as an app instance's pool
// always is), never by the SIGKILL that follows the grace.
func TestPostgresStopsByItselfWithAClient(t *testing.T) {
	p := launchPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := p.proc.ExitErr().Error(); got != "exit status 0" {
		t.Fatalf("postgres ended by %q, want exit status 0 (its own shutdown, not the SIGKILL after the grace)", got)
	}
}

// The stack stops a database the way a crash would, and the tests below
// check that none grants a lock on its way down. Stopped while clients
// take the lock as fast as they can and its holder is in its section, a
// server that ends its sessions one by one (PostgreSQL's fast shutdown,
// MariaDB's own) frees the holder's lock with its session, and a waiter
// not yet ended can be granted it beside the holder: in some stops only
// (MEASUREMENTS.md), so each test also checks how the server was stopped.
const stops = 8

// TestPostgresStopGrantsNothing: PostgreSQL's advisory lock, tried by 96
// sessions over three pools (an app instance's each).
func TestPostgresStopGrantsNothing(t *testing.T) {
	p := launchPostgres(t)
	var pools []*pgxpool.Pool // each dials again after a restart
	for range 3 {
		cfg, err := pgxpool.ParseConfig(p.DSN())
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 32
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		pools = append(pools, pool)
	}
	for r := range stops {
		over := sectionsAcrossStop(t, p, 96, func(ctx context.Context, i int) func() {
			conn, err := pools[i%3].Acquire(ctx)
			if err != nil {
				return nil // the server is down: the pool dials again
			}
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&ok); err != nil || !ok {
				conn.Release()
				return nil
			}
			return func() {
				conn.Exec(ctx, "SELECT pg_advisory_unlock(42)")
				conn.Release()
			}
		})
		if len(over) > 0 {
			t.Errorf("stop %d: the lock was granted beside its holder on the way down: %s", r+1, strings.Join(over, "; "))
		}
		relaunch(t, p, r)
	}
	log, err := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "received immediate shutdown request"); n != stops {
		t.Errorf("%d immediate shutdowns in the server's log, want %d (one per stop)", n, stops)
	}
}

// TestMariaDBStopGrantsNothing: db-for-update's row lock (SELECT ... FOR
// UPDATE in a transaction), waited for by 96 connections.
func TestMariaDBStopGrantsNothing(t *testing.T) {
	m := launchMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := backend.MySQL(ctx, m.DSN(), "lockladder_test", 96)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE TABLE locks (name VARCHAR(128) PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO locks VALUES ('k')"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for r := range stops {
		over := sectionsAcrossStop(t, m, 96, func(ctx context.Context, _ int) func() {
			tx, err := db.BeginTx(context.WithoutCancel(ctx), nil)
			if err != nil {
				return nil
			}
			var name string
			if err := tx.QueryRowContext(ctx, "SET STATEMENT max_statement_time=1 FOR SELECT name FROM locks WHERE name = 'k' FOR UPDATE").Scan(&name); err != nil {
				tx.Rollback()
				return nil
			}
			return func() { tx.Commit() }
		})
		if len(over) > 0 {
			t.Errorf("stop %d: the row was granted beside its holder on the way down: %s", r+1, strings.Join(over, "; "))
		}
		if got := m.proc.ExitErr(); got == nil || got.Error() != "signal: killed" {
			t.Errorf("stop %d: mariadbd ended by %v, want signal: killed", r+1, got)
		}
		relaunch(t, m, r)
	}
	// The data came back with every start: the row is still there.
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM locks").Scan(&n); err != nil || n != 1 {
		t.Errorf("after %d stops: %d lock rows (%v), want 1", stops, n, err)
	}
}

func relaunch(t *testing.T, srv proc.Server, r int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := proc.Launch(ctx, srv); err != nil {
		t.Fatalf("start %d after the stop: %v", r+2, err)
	}
}

// sectionsAcrossStop runs n clients, each taking the lock with take
// (nil: not had) and holding it 2ms (its business) before it lets go.
// Once the lock has been had warmUp times (the clients' connections are
// up), the next holder keeps it until 20ms after srv's Stop has
// returned, and srv is stopped while it holds: every grant on the way
// down is beside it. It returns each section that began before another
// had ended.
func sectionsAcrossStop(t *testing.T, srv proc.Server, n int, take func(ctx context.Context, client int) (release func())) []string {
	t.Helper()
	const warmUp = 20
	type section struct{ from, to time.Time }
	var (
		mu       sync.Mutex
		sections []section
		armed    bool
	)
	holding, stopped := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				release := take(ctx, i)
				if release == nil {
					continue
				}
				from := time.Now()
				mu.Lock()
				hold := armed
				armed = false
				mu.Unlock()
				if hold {
					close(holding)
					<-stopped
					time.Sleep(20 * time.Millisecond)
				} else {
					time.Sleep(2 * time.Millisecond)
				}
				mu.Lock()
				sections = append(sections, section{from, time.Now()})
				if len(sections) == warmUp {
					armed = true
				}
				mu.Unlock()
				release()
			}
		})
	}
	var (
		stop time.Time
		err  error
	)
	select {
	case <-holding:
		stop = time.Now()
		err = srv.Stop()
	case <-time.After(time.Minute):
		err = fmt.Errorf("the lock was not had %d times in a minute", warmUp+1)
	}
	close(stopped)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(sections, func(a, b section) int { return a.from.Compare(b.from) })
	var over []string
	for i := 1; i < len(sections); i++ {
		if prev := sections[i-1]; sections[i].from.Before(prev.to) {
			over = append(over, "one began "+sections[i].from.Sub(stop).String()+" after the stop, the holder's ended "+
				prev.to.Sub(stop).String()+" after it")
		}
	}
	return over
}
