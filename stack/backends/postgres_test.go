package backends_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/servertest"
)

// The stack's PostgreSQL: the apps' role logs in with the password made
// for this server and no other; it is no superuser; the server listens
// on loopback only; and a session that holds an advisory lock, cut by
// the lab's control connection, frees the lock at once for another.
func TestPostgres(t *testing.T) {
	pool, dsn := servertest.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(u.Host); host != "127.0.0.1" {
		t.Errorf("DSN host %q, want 127.0.0.1", host)
	}
	var super bool
	var listen string
	if err := pool.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super {
		t.Error("the apps' role is a superuser")
	}
	if err := pool.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen); err != nil {
		t.Fatal(err)
	}
	if listen != "127.0.0.1" {
		t.Errorf("listen_addresses %q, want 127.0.0.1", listen)
	}
	// A wrong password is refused: scram on every connection.
	bad := *u
	bad.User = url.UserPassword(u.User.Username(), "wrong")
	if c, err := pgx.Connect(ctx, bad.String()); err == nil {
		c.Close(ctx)
		t.Error("a wrong password logged in")
	} else if !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("wrong password: %v, want password authentication failed", err)
	}

	// A holder's session, cut mid-section.
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release() // before the pool's Close, which waits for it
	// Named as an armed request names its session: the lab cuts no other.
	if _, err := holder.Exec(ctx, "SELECT set_config('application_name', $1, false), pg_advisory_lock(42)", fault.ArmedSession); err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := pool.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || got {
		t.Fatalf("another session took the held lock: %v, %v", got, err)
	}
	control, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close(ctx)
	// The holder is idle in its section; a cut of sessions idle for an
	// hour spares it, one of sessions idle for 0s ends it.
	if n, err := backend.CutAdvisoryHolders(ctx, control, time.Hour); err != nil || n != 0 {
		t.Fatalf("cut of hour-idle holders: %d, %v; want 0", n, err)
	}
	if n, err := backend.CutAdvisoryHolders(ctx, control, 0); err != nil || n != 1 {
		t.Fatalf("cut: %d, %v; want 1", n, err)
	}
	other, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	// The server frees the lock once the backend is gone: wait for it.
	for !got {
		if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !got && ctx.Err() != nil {
			t.Fatal("the cut session's lock was never freed")
		}
	}
	// The holder learns only at its next query.
	if _, err := holder.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("the cut holder's session still answers")
	}
}
