package stack

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/redisfam"
	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"
)

// Every redis-server the stack starts, and every one the compose files
// run, has its memory bounded (redisfam.MaxMemory) and evicts nothing: a
// client that makes keys without end fills Redis, whose writes then
// fail, never the machine, and no lock or counter is dropped silently.
func TestRedisMemoryBounded(t *testing.T) {
	for _, file := range []string{"docker-compose.yml", "deploy/compose.cluster.yml"} {
		var c compose
		if err := yaml.Unmarshal(readRepoFile(t, file), &c); err != nil {
			t.Fatal(err)
		}
		servers := 0
		for name, svc := range c.Services {
			if !strings.Contains(strings.Join(append(svc.Entrypoint, svc.Command...), " "), "redis-server ") {
				continue
			}
			servers++
			got := flagPairs(svc.Command)
			if got["--maxmemory"] != redisfam.MaxMemory || got["--maxmemory-policy"] != "noeviction" {
				t.Errorf("%s: %s: --maxmemory %q --maxmemory-policy %q, want %s and noeviction",
					file, name, got["--maxmemory"], got["--maxmemory-policy"], redisfam.MaxMemory)
			}
		}
		if servers == 0 {
			t.Errorf("%s: no redis-server found", file)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := redisfam.Start(ctx, "127.0.0.1:0", Real, os.Getenv("CI") == "true", nil)
	need.Real(t, "redis-server", err)
	defer func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer rdb.Close()
	cfg, err := rdb.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if cfg["maxmemory"] != "268435456" || cfg["maxmemory-policy"] != "noeviction" {
		t.Errorf("redis-server runs with maxmemory %q, policy %q: want 268435456 (%s) and noeviction",
			cfg["maxmemory"], cfg["maxmemory-policy"], strings.ToUpper(redisfam.MaxMemory))
	}
}
