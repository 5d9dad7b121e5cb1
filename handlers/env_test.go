package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// env is one app (handlers.New) on a miniredis, with its ladder.
type env struct {
	router http.Handler
	mr     *miniredis.Miniredis
	rdb    *redis.Client
	ladder *ladder.Ladder
}

func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

func newEnvWith(t *testing.T, faults *handlers.FaultActions) *env {
	t.Helper()
	return newEnvConfig(t, func(c *handlers.Config) { c.Faults = faults })
}

// newEnvConfig is the router over a fresh miniredis, with Redis's rungs
// (no masters, no other back ends), as change leaves its Config.
func newEnvConfig(t *testing.T, change func(*handlers.Config)) *env {
	t.Helper()
	return newEnvRedis(t, func(c *handlers.Config, _ *redis.Client) { change(c) })
}

// newEnvRedis is newEnvConfig, with the Redis client at hand for change.
func newEnvRedis(t *testing.T, change func(*handlers.Config, *redis.Client)) *env {
	t.Helper()
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	n := notify.New(rdb, notify.Options{})
	t.Cleanup(func() { n.Close() })
	ladder := ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second, Wait: 5 * time.Second,
		Retry: lock.FixedSleep(5 * time.Millisecond), Notifier: n}, lock.RedlockOptions{})
	cfg := handlers.Config{
		Instance:  "test-1",
		Inventory: inventory.New(rdb),
		Ladder:    ladder,
		MaxStock:  1000,
		Hosts:     []string{"example.com"}, // httptest.NewRequest's Host
	}
	change(&cfg, rdb)
	return &env{router: handlers.New(cfg), mr: mr, rdb: rdb, ladder: ladder}
}

func (e *env) do(t *testing.T, method, target string) (int, http.Header, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	e.router.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	var body map[string]any
	if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			// /strategies answers an array
			body = map[string]any{"raw": w.Body.String()}
		}
	}
	return w.Code, w.Header(), body
}
