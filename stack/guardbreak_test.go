package stack_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/stack"
)

// TestGuardBreak: `stack guard` names the run that holds the stack's run
// guard, and -break frees it, naming whose it was; a run then takes it.
// Taking it needs the stack's Redis password; a password file others
// can read is refused.
func TestGuardBreak(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			s, _ := startStack(t, stack.Embedded, func(c *stack.Config) { c.Redis, c.Dir = mode, dir })
			state := `{"redis": "` + s.RedisAddr() + `"}`
			if err := os.WriteFile(filepath.Join(dir, "stack.json"), []byte(state), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c := &http.Client{}
			if _, err := guard.Take(ctx, c, s.URL(), "mine", guard.Run{Kind: "bench"}); err == nil || !strings.Contains(err.Error(), "Redis password") {
				t.Fatalf("a take with a guessed key: %v, want refused", err)
			}
			stale, err := guard.Take(ctx, c, s.URL(), s.RedisPassword(), guard.Run{Kind: "race", Lock: "lua", Endpoint: "sale"})
			if err != nil {
				t.Fatal(err)
			}
			defer stale.Release(ctx)

			var out bytes.Buffer
			if err := stack.GuardCommand(ctx, []string{"-dir", dir}, &out); err != nil || !strings.Contains(out.String(), `held by "race of lua on sale"`) {
				t.Errorf("stack guard: %v %q, want the race named", err, out.String())
			}
			out.Reset()
			if err := stack.GuardCommand(ctx, []string{"-dir", dir, "-break"}, &out); err != nil || !strings.Contains(out.String(), `freed the run guard held by "race of lua on sale"`) {
				t.Errorf("stack guard -break: %v %q, want the race named", err, out.String())
			}
			// A bench session on the stack takes it with the stack's key
			// (bench.Open asks the stack for it), as the matrix does.
			sess, err := bench.Open(ctx, bench.Config{URL: s.URL(), Instances: s.InstanceURLs(), Run: guard.Run{Kind: "matrix"}}, s, nil)
			if err != nil {
				t.Fatalf("a session once the guard was broken: %v", err)
			}
			out.Reset()
			if err := stack.GuardCommand(ctx, []string{"-dir", dir}, &out); err != nil || !strings.Contains(out.String(), `held by "matrix"`) {
				t.Errorf("stack guard during a session: %v %q, want the matrix named", err, out.String())
			}
			sess.Close()
			out.Reset()
			if err := stack.GuardCommand(ctx, []string{"-dir", dir, "-break"}, &out); err != nil || !strings.Contains(out.String(), "nobody held") {
				t.Errorf("stack guard -break of a free guard: %v %q", err, out.String())
			}

			if err := os.Chmod(s.PasswordPath(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := stack.GuardCommand(ctx, []string{"-dir", dir}, &out); err == nil || !strings.Contains(err.Error(), "other users may read it") {
				t.Errorf("stack guard with a password file others can read: %v, want refused", err)
			}
		})
	}
}
