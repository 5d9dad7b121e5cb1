package stack_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// Every Redis server of a stack, real or embedded, refuses a client
// without the stack's password (NOAUTH), the run guard's key included,
// and serves one with it; the password is in a file only its owner
// reads, in the instances' environment, and on no command line.
func TestRedisNeedsThePassword(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			s, _ := startStack(t, stack.Embedded, func(c *stack.Config) { c.Redis = mode })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pw := s.RedisPassword()
			if len(pw) < 32 {
				t.Fatalf("RedisPassword() = %q, want 128 random bits", pw)
			}
			servers := append([]string{s.RedisAddr()}, s.MasterAddrs()...)
			for _, addr := range servers {
				anon := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
				for _, cmd := range [][]any{
					{"GET", "lab:run"},
					{"EVAL", "return redis.call('GET', 'lab:run')", 0},
					{"EVAL", "return 1", 0},
					{"SCRIPT", "LOAD", "return 1"},
					{"CONFIG", "SET", "notify-keyspace-events", ""},
				} {
					err := anon.Do(ctx, cmd...).Err()
					if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
						t.Errorf("%v on %s without the password: %v, want NOAUTH", cmd, addr, err)
					}
				}
				anon.Close()
				authed := redis.NewClient(&redis.Options{Addr: addr, Password: pw, MaxRetries: -1, DialerRetries: 1})
				if v, err := authed.Do(ctx, "EVAL", "redis.call('SET', 'k', 'v') return redis.call('GET', 'k')", 0).Text(); err != nil || v != "v" {
					t.Errorf("a script on %s with the password: %q %v", addr, v, err)
				}
				authed.Close()
				wrong := redis.NewClient(&redis.Options{Addr: addr, Password: "guessed", MaxRetries: -1, DialerRetries: 1})
				err := wrong.Ping(ctx).Err()
				wrong.Close()
				if err == nil {
					t.Errorf("PING on %s with a wrong password answered", addr)
				}
				if err := pingAddr(ctx, addr, pw); err != nil {
					t.Errorf("PING on %s with the password: %v", addr, err)
				}
			}

			// The file the stack's owner (and redis-cli) reads it from.
			got, err := stack.ReadPassword(filepath.Dir(s.PasswordPath()))
			if err != nil || got != pw {
				t.Errorf("ReadPassword = %q, %v; want the stack's", got, err)
			}
			fi, err := os.Stat(s.PasswordPath())
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, %v; want mode 0600", s.PasswordPath(), fi, err)
			}

			// The instances have it in their environment, and no process
			// of the stack shows it on its command line.
			for i, pid := range s.InstancePids() {
				if v, _ := envValue(redistest.ProcStrings(t, pid, "environ"), stack.RedisPasswordEnv); v != pw {
					t.Errorf("instance %d: %s=%q, want the stack's password", i, stack.RedisPasswordEnv, v)
				}
			}
			for _, pid := range s.Pids() {
				if slices.ContainsFunc(redistest.ProcStrings(t, pid, "cmdline"), func(a string) bool { return strings.Contains(a, pw) }) {
					t.Errorf("pid %d shows the password on its command line", pid)
				}
			}

			// The instances, authenticated, serve.
			if code, _, body := get(t, "POST", s.URL()+"/reset?stock=3"); code != 200 {
				t.Fatalf("POST /reset: %d %s", code, body)
			}
			if code, _, body := get(t, "POST", s.URL()+"/sale?lock=redlock"); code != 200 {
				t.Errorf("POST /sale?lock=redlock: %d %s", code, body)
			}
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(s.PasswordPath()); !os.IsNotExist(err) {
				t.Errorf("%s after Stop: %v, want it removed", s.PasswordPath(), err)
			}
		})
	}
}
