package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
)

// pgRungs are the PostgreSQL advisory-lock rungs over pool.
func pgRungs(pool *pgxpool.Pool, o lock.Options) map[string]lock.Locker {
	return map[string]lock.Locker{
		"pg-advisory":        lock.NewPGAdvisory(pool, o),
		"pg-advisory-xact":   lock.NewPGAdvisoryXact(pool, o),
		"pg-advisory-fenced": lock.NewPGAdvisoryFenced(pool, o),
	}
}

// TestPGAdvisoryExcludes: each PostgreSQL rung is exact under
// contention, refuses at once with try=0, gives up at its bound, and
// frees the lock at its release; and leaves no lock on a pooled
// connection.
func TestPGAdvisoryExcludes(t *testing.T) {
	rdb, _ := redistest.Start(t)
	pool, _ := servertest.Postgres(t)
	ctx := context.Background()
	// The rungs' own bound is an hour: contenders wait as long as it
	// takes, and a try that ignored its bound would not give up.
	for name, l := range pgRungs(pool, lock.Options{Wait: time.Hour}) {
		t.Run(name, func(t *testing.T) {
			contend(t, rdb, l, lock.Call{}, "n:"+name, 8, 15)
			held, err := l.Obtain(ctx, "lock:"+name, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { held.Release(ctx) })
			locktest.Refuses(t, l, "lock:"+name, 300*time.Millisecond, time.Hour)
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
			awaitOrphans(t, pool)
			again, err := l.Obtain(ctx, "lock:"+name, lock.Call{Try: dur(0)})
			if err != nil {
				t.Fatalf("after the release: %v", err)
			}
			t.Cleanup(func() { again.Release(ctx) })
			if err := again.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// Every connection back in the pool holds no advisory lock.
			awaitOrphans(t, pool)
			var n int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d advisory locks left after every release", n)
			}
		})
	}
}

// awaitOrphans waits until no session outside pool holds an advisory
// lock. A try cut by its deadline while its statement ran may have been
// granted the lock: the rung then closes that session (discard, or the
// driver on the cancelled statement), and the server frees its lock
// only once it has seen the socket closed, which on a loaded machine
// came after the test's next look (CI: "1 advisory locks left", and
// pg-advisory-xact busy after its release). The pool's own sessions are
// what the test judges; a lock one of them holds is not waited out.
func awaitOrphans(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	for {
		conns := pool.AcquireAllIdle(ctx)
		if len(conns) == 0 {
			t.Fatal("no idle connection in the pool to look with")
		}
		ours := map[uint32]bool{}
		for _, c := range conns {
			ours[c.Conn().PgConn().PID()] = true
		}
		var pids []uint32
		rows, err := conns[0].Query(ctx, "SELECT pid FROM pg_locks WHERE locktype = 'advisory'")
		if err == nil {
			pids, err = pgx.CollectRows(rows, pgx.RowTo[uint32])
		}
		for _, c := range conns {
			c.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		orphans := 0
		for _, pid := range pids {
			if !ours[pid] {
				orphans++
			}
		}
		if orphans == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPGAdvisorySessionCut is the PostgreSQL rungs' flaw at the lock's
// level: A holds; the lab cuts A's session from a control connection (as
// a pooler, a failover or a network cut would); the server frees the
// lock and B takes it while A, who was told nothing, still holds its
// Lock. A learns at its release (ErrNotHeld). With the token drawn on
// the session (pg-advisory-fenced), A's late write is refused after B's.
// A is an armed request (fault.Session): a plain holder of another key,
// idle in its section at the same moment, keeps its session.
func TestPGAdvisorySessionCut(t *testing.T) {
	rdb, _ := redistest.Start(t)
	pool, dsn := servertest.Postgres(t)
	ctx := context.Background()
	control, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close(ctx)
	store := inventory.New(rdb)
	for name, l := range pgRungs(pool, lock.Options{Wait: 5 * time.Second}) {
		t.Run(name, func(t *testing.T) {
			key := "lock:cut:" + name
			armed := fault.With(ctx, func(context.Context, fault.Point) {})
			a, err := l.Obtain(armed, key, lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			// A held connection would hold the pool's Close for good:
			// give it back however the test ends (Release is once).
			t.Cleanup(func() { a.Release(ctx) })
			plain, err := l.Obtain(ctx, key+":plain", lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { plain.Release(ctx) })
			if n, err := backend.CutAdvisoryHolders(ctx, control, 0); err != nil || n != 1 {
				t.Fatalf("cut: %d sessions, %v; want 1 (the armed holder's)", n, err)
			}
			if err := plain.Release(ctx); err != nil {
				t.Fatalf("the plain holder's release after the cut: %v, want its session whole", err)
			}
			b, err := l.Obtain(ctx, key, lock.Call{})
			if err != nil {
				t.Fatalf("B, after A's session was cut: %v, want the lock", err)
			}
			t.Cleanup(func() { b.Release(ctx) })
			// Two holders now. Only a fence tells them apart.
			ta, tb := fenceOf(a), fenceOf(b)
			if name == "pg-advisory-fenced" {
				if ta == 0 || tb <= ta {
					t.Fatalf("tokens A %d, B %d: want 0 < A < B", ta, tb)
				}
				if err := store.Reset(ctx, 10); err != nil {
					t.Fatal(err)
				}
				if _, err := store.Sell(ctx, inventory.Guard{Token: tb}); err != nil {
					t.Fatalf("B's write: %v", err)
				}
				if _, err := store.Sell(ctx, inventory.Guard{Token: ta}); !errors.Is(err, inventory.ErrStaleToken) {
					t.Fatalf("A's late write: %v, want ErrStaleToken", err)
				}
			} else if ta != 0 || tb != 0 {
				t.Fatalf("tokens %d, %d from an unfenced rung", ta, tb)
			}
			if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("A's release after the cut: %v, want ErrNotHeld", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Errorf("B's release: %v", err)
			}
		})
	}
}

// fenceOf is l's fencing token, 0 for a lock without one.
func fenceOf(l lock.Lock) int64 {
	if t, ok := l.(lock.Tokened); ok {
		return t.Token()
	}
	return 0
}
