package handlers_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
)

// GET /lock reads the item's lock key back: held with no TTL (a crashed
// setnx holder's), held with its lease left, or free; bad input is a 400.
func TestLockState(t *testing.T) {
	e := newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) { c.Redis = rdb })
	e.do(t, "POST", "/reset?stock=5")
	if code, _, body := e.do(t, "GET", "/lock"); code != 200 || body["held"] != false || body["key"] != inventory.StockLock {
		t.Fatalf("free: %d %v", code, body)
	}
	e.mr.Set(inventory.StockLock, "1")
	if code, _, body := e.do(t, "GET", "/lock?endpoint=sale"); code != 200 || body["held"] != true || body["ttl_ms"] != -1.0 {
		t.Fatalf("held for good: %d %v, want held, ttl_ms -1", code, body)
	}
	e.mr.Set(inventory.NumLock, "1")
	e.mr.SetTTL(inventory.NumLock, 1500*time.Millisecond)
	if code, _, body := e.do(t, "GET", "/lock?endpoint=testLock"); code != 200 || body["held"] != true || body["ttl_ms"] != 1500.0 || body["key"] != inventory.NumLock {
		t.Fatalf("a lease: %d %v, want held, ttl_ms 1500", code, body)
	}
	for _, q := range []string{"/lock?endpoint=buy", "/lock?key=guard", "/lock?endpoint=sale&endpoint=sale"} {
		if code, _, body := e.do(t, "GET", q); code != 400 {
			t.Errorf("%s: %d %v, want 400", q, code, body)
		}
	}
	if code, _, body := newEnv(t).do(t, "GET", "/lock"); code != 503 {
		t.Errorf("no Redis given: %d %v, want 503", code, body)
	}
}
