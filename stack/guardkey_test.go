package stack_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/stack"
)

// TestGuardTakenWithTheStacksKey: a stack's app gives the run guard only
// to a caller that shows the stack's key (its Redis password), and a
// bench session on the stack takes it with that key (bench.Open asks the
// stack for it), as the matrix does. (`stack guard`, which names and
// breaks the holder, is internal/stackstate's TestGuardCommand.)
func TestGuardTakenWithTheStacksKey(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			s, _ := startStack(t, stack.Embedded, func(c *stack.Config) { c.Redis, c.Dir = mode, t.TempDir() })
			ctx := context.Background()
			if _, err := guard.Take(ctx, &http.Client{}, s.URL(), "mine", guard.Run{Kind: "bench"}); err == nil || !strings.Contains(err.Error(), "Redis password") {
				t.Fatalf("a take with a guessed key: %v, want refused", err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: s.RedisAddr(), Password: s.RedisPassword()})
			defer rdb.Close()
			store := guard.NewStore(rdb, 0)
			if _, held, err := store.Holder(ctx); err != nil || held {
				t.Fatalf("the guard after a refused take: held %v, %v; want free", held, err)
			}
			sess, err := bench.Open(ctx, bench.Config{URL: s.URL(), Instances: s.InstanceURLs(), Run: guard.Run{Kind: "matrix"}}, s, nil)
			if err != nil {
				t.Fatalf("a session with the stack's key: %v", err)
			}
			if h, held, err := store.Holder(ctx); err != nil || !held || h.Owner != "matrix" {
				t.Errorf("the guard during a session: %v held %v, %v; want the matrix", h, held, err)
			}
			sess.Close()
			if h, held, err := store.Holder(ctx); err != nil || held {
				t.Errorf("the guard after the session: %v held %v, %v; want free", h, held, err)
			}
		})
	}
}
