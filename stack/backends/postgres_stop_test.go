package backends

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockladder/lockladder/stack/proc"
)

// TestPostgresStopsByItselfWithAClient: Stop ends PostgreSQL by its own
// fast shutdown even while a client is connected (as an app instance's
// pool always is), never by the SIGKILL that follows the grace.
func TestPostgresStopsByItselfWithAClient(t *testing.T) {
	bin, err := FindPostgres()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("postgres: %v; under CI=true the test needs it", err)
		}
		t.Skipf("skipped: postgres: %v", err)
	}
	dir := t.TempDir()
	p := NewPostgres(bin, "127.0.0.1", dir, t.TempDir(), proc.NewLogger(nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := proc.Launch(ctx, p); err != nil {
		p.Remove()
		t.Fatal(err)
	}
	defer p.Remove()
	defer p.Stop()
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
