package redisfam_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

func TestStartRedis(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == stack.Real {
				redistest.NeedServer(t, "redis-server")
			}
			ctx := context.Background()
			r, err := redisfam.Start(ctx, "127.0.0.1:0", mode, ci, redistest.Log(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Stop() })
			if got, want := r.Embedded(), mode == stack.Embedded; got != want {
				t.Errorf("Embedded() = %v, want %v", got, want)
			}
			if got := r.Pid(); (got != 0) != (mode == stack.Real) {
				t.Errorf("Pid() = %d in mode %s", got, mode)
			}

			rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 150*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
				t.Fatalf("GET k = %q, %v; want v", got, err)
			}
			// The TTL runs out in real time, embedded too (nobody calls
			// FastForward here).
			time.Sleep(400 * time.Millisecond)
			if got, err := rdb.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET k after its PX 150 = %q, %v; want redis.Nil", got, err)
			}

			pid := r.Pid()
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := r.Stop(); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if pid != 0 {
				redistest.Dead(t, []int{pid})
			}
			pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if err := rdb.Ping(pctx).Err(); err == nil {
				t.Error("PING answered after Stop")
			}
		})
	}
}

// TestStartRedisNeverAdoptsAnotherServer: a port already served by another
// redis-server must fail the start, not pass for ours (two tests would then
// share one Redis while ours had exited). Parallel test packages picking
// free ports at once meet exactly this; with port 0 Start picks again.
func TestStartRedisNeverAdoptsAnotherServer(t *testing.T) {
	redistest.NeedServer(t, "redis-server")
	ctx := context.Background()
	first, err := redisfam.Start(ctx, "127.0.0.1:0", stack.Real, ci, redistest.Log(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Stop() })

	second, err := redisfam.Start(ctx, first.Addr(), stack.Real, ci, redistest.Log(t))
	if err == nil {
		second.Stop()
		t.Fatalf("a second redis-server on %s reported started (pid %d) while pid %d serves it", first.Addr(), second.Pid(), first.Pid())
	}
	if !strings.Contains(err.Error(), "taken by another process") {
		t.Fatalf("error %v, want the port named as taken", err)
	}
	if pingErr := redis.NewClient(&redis.Options{Addr: first.Addr()}).Ping(ctx).Err(); pingErr != nil {
		t.Fatalf("the first server stopped answering: %v", pingErr)
	}
}
