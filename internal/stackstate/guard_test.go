package stackstate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// TestGuardCommand: `stack guard` names the run that holds the run guard
// of the stack recorded in its run dir, and -break frees it, naming whose
// it was; a run then takes it. It reads the stack's Redis password from
// the run dir, and refuses a password file others can read. (That the
// app gives the guard only to a caller with the stack's key, and a bench
// session takes it with it, is stack's TestGuardTakenWithTheStacksKey.)
func TestGuardCommand(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			if err := GuardCommand(context.Background(), []string{"-dir", dir}, &out); err == nil || !strings.Contains(err.Error(), "no stack up with run dir") {
				t.Errorf("stack guard with no stack: %v, want refused", err)
			}
			pw := backends.NewPassword()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv, err := redisfam.StartAuth(ctx, "127.0.0.1:0", mode, redistest.CI(), pw, redistest.Log(t))
			need.Real(t, "redis-server", err)
			t.Cleanup(func() {
				if err := srv.Stop(); err != nil {
					t.Errorf("stop redis: %v", err)
				}
			})
			state := `{"redis": "` + srv.Addr() + `"}`
			if err := os.WriteFile(filepath.Join(dir, "stack.json"), []byte(state), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := GuardCommand(ctx, []string{"-dir", dir}, &out); err == nil || !strings.Contains(err.Error(), "the stack's Redis password") {
				t.Errorf("stack guard without the password file: %v, want refused", err)
			}
			pass := filepath.Join(dir, stack.RedisPasswordFile)
			if err := os.WriteFile(pass, []byte(pw+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: pw})
			defer rdb.Close()
			store := guard.NewStore(rdb, 0)
			if _, _, err := store.Take(ctx, "race of lua on sale"); err != nil {
				t.Fatal(err)
			}

			run := func(args ...string) string {
				t.Helper()
				out.Reset()
				if err := GuardCommand(ctx, append([]string{"-dir", dir}, args...), &out); err != nil {
					t.Fatalf("stack guard %q: %v", args, err)
				}
				return out.String()
			}
			if got := run(); !strings.Contains(got, `held by "race of lua on sale"`) {
				t.Errorf("stack guard: %q, want the race named", got)
			}
			if got := run("-break"); !strings.Contains(got, `freed the run guard held by "race of lua on sale"`) {
				t.Errorf("stack guard -break: %q, want the race named", got)
			}
			if _, _, err := store.Take(ctx, "matrix"); err != nil {
				t.Fatalf("a run once the guard was broken: %v", err)
			}
			if got := run(); !strings.Contains(got, `held by "matrix"`) {
				t.Errorf("stack guard during a run: %q, want the matrix named", got)
			}
			if err := rdb.Del(ctx, guard.Key).Err(); err != nil {
				t.Fatal(err)
			}
			if got := run(); !strings.Contains(got, "nobody holds") {
				t.Errorf("stack guard of a free guard: %q", got)
			}
			if got := run("-break"); !strings.Contains(got, "nobody held") {
				t.Errorf("stack guard -break of a free guard: %q", got)
			}

			if err := os.Chmod(pass, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := GuardCommand(ctx, []string{"-dir", dir}, &out); err == nil || !strings.Contains(err.Error(), "other users may read it") {
				t.Errorf("stack guard with a password file others can read: %v, want refused", err)
			}
		})
	}
}
