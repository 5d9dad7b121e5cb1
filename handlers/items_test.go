package handlers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
)

// TestSkuSellsThatItemOnly: under every lock, sku=ID sells and counts
// item ID, and the lab's item and the others stay as they were; /stock
// and /reset take sku= too, and /reset?skus=K sets items 1 to K.
func TestSkuSellsThatItemOnly(t *testing.T) {
	for _, name := range []string{"none", "setnx-px", "lua", "getset", "reentrant", "fenced", "fair", "cohort", "cohort-carry", "atomic"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			mustDo(t, e, "POST", "/reset?stock=5", 200)
			if _, _, body := mustDo(t, e, "POST", "/reset?stock=3&skus=2", 200); body["skus"] != 2.0 || body["stock"] != 3.0 {
				t.Fatalf("reset skus=2: %v", body)
			}
			// Uncontended, each takes its lock at once; try=2s, so that
			// a loaded machine (make test runs the packages side by
			// side, under -race) cannot make it a 503.
			wait := "&try=2s"
			if name == "none" || name == "atomic" {
				wait = "" // they never wait: try= is a 400
			}
			for range 2 {
				mustDo(t, e, "POST", "/sale?lock="+name+"&sku=2"+wait, 200)
				mustDo(t, e, "GET", "/testLock?lock="+name+"&sku=2"+wait, 200)
			}
			if _, _, body := mustDo(t, e, "GET", "/sale?lock="+name+"&sku=2"+wait, 200); body["remaining"] != 0.0 {
				t.Fatalf("third sale of item 2: %v, want remaining 0", body)
			}
			mustDo(t, e, "GET", "/sale?lock="+name+"&sku=2"+wait, 409)
			for target, want := range map[string]string{
				"/stock":       "5 0 0",
				"/stock?sku=1": "3 0 0",
				"/stock?sku=2": "0 3 2",
			} {
				_, _, body := mustDo(t, e, "GET", target, 200)
				if got := fmt.Sprint(body["stock"], " ", body["sold"], " ", body["num"]); got != want {
					t.Errorf("%s: stock sold num %s, want %s", target, got, want)
				}
			}
			mustDo(t, e, "POST", "/reset?stock=4&sku=2", 200)
			if _, _, body := mustDo(t, e, "GET", "/stock?sku=2", 200); body["stock"] != 4.0 || body["sold"] != 0.0 {
				t.Fatalf("item 2 after its reset: %v", body)
			}
		})
	}
}

// TestSkuBadInputChangesNothing: a bad sku= or skus= is a 400 that says
// what is wrong, and no item changes.
func TestSkuBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	mustDo(t, e, "POST", "/reset?stock=5&skus=2", 200)
	mustDo(t, e, "POST", "/reset?stock=5", 200)
	for target, says := range map[string]string{
		"/sale?lock=lua&sku=":                               "sku: an item's ID has 1 to",
		"/sale?lock=lua&sku=a%7Db":                          "only letters, digits",
		"/testLock?lock=lua&sku=" + strings.Repeat("x", 41): "1 to 40 characters",
		"/sale?lock=db-optimistic&sku=1":                    "its table in MariaDB keeps the lab's one item",
		"/stock?sku=a*":                                     "only letters, digits",
		"/reset?stock=1&skus=0":                             "skus: 0 is out of range [1, 1000]",
		"/reset?stock=1&skus=1001":                          "skus: 1001 is out of range",
		"/reset?stock=1&skus=x":                             "skus: \"x\" is not a whole number",
		"/reset?stock=1&sku=1&skus=2":                       "not both",
		"/reset?stock=1&sku=%7B":                            "only letters, digits",
	} {
		method := "POST"
		if strings.HasPrefix(target, "/stock") {
			method = "GET"
		}
		_, _, body := mustDo(t, e, method, target, 400)
		if msg, _ := body["error"].(string); !strings.Contains(msg, says) {
			t.Errorf("%s: error %q, want it to say %q", target, msg, says)
		}
	}
	for _, target := range []string{"/stock", "/stock?sku=1", "/stock?sku=2"} {
		if _, _, body := mustDo(t, e, "GET", target, 200); body["stock"] != 5.0 || body["sold"] != 0.0 || body["num"] != 0.0 {
			t.Errorf("%s after bad requests: %v, want stock 5 and nothing sold", target, body)
		}
	}
}

// mustDo is e.do, failing the test unless the answer has status code.
func mustDo(t *testing.T, e *env, method, target string, code int) (int, map[string][]string, map[string]any) {
	t.Helper()
	got, h, body := e.do(t, method, target)
	if got != code {
		t.Fatalf("%s %s: %d %v, want %d", method, target, got, body, code)
	}
	return got, h, body
}

// TestIdleItemsAreDropped: the bound of items is never used up for good.
// Once MaxItems exist, an item not reset for ItemIdle is dropped when a
// /reset needs its room: its keys deleted, the new item made; items
// reset within ItemIdle stay, and while none is idle the bound holds (a
// 409 too_many_items that changes nothing).
func TestIdleItemsAreDropped(t *testing.T) {
	e := newEnvRedis(t, func(c *handlers.Config, rdb *redis.Client) { c.Redis, c.MaxItems = rdb, 3 })
	mustDo(t, e, "POST", "/reset?stock=5&skus=3", 200)
	mustDo(t, e, "POST", "/sale?lock=lua&sku=1", 200)
	before := e.mr.Dump()
	if code, _, body := e.do(t, "POST", "/reset?stock=5&sku=new"); code != 409 || body["reason"] != contract.ReasonTooManyItems {
		t.Fatalf("a 4th item with none idle: %d %v, want 409 too_many_items", code, body)
	}
	if after := e.mr.Dump(); after != before {
		t.Fatalf("a refused reset changed Redis:\nbefore %s\nafter  %s", before, after)
	}

	// Items 1 and 2 were last made longer than ItemIdle ago; 3 was not.
	old := float64(time.Now().Add(-handlers.ItemIdle - time.Minute).UnixMilli())
	for _, sku := range []string{"1", "2"} {
		if err := e.rdb.ZAdd(context.Background(), handlers.ItemsKey, redis.Z{Score: old, Member: sku}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mustDo(t, e, "POST", "/reset?stock=7&sku=new", 200)
	if _, _, body := mustDo(t, e, "GET", "/stock?sku=new", 200); body["stock"] != 7.0 {
		t.Errorf("the new item: %v, want stock 7", body)
	}
	for _, sku := range []string{"1", "2"} {
		k := inventory.ItemOf(sku)
		if n := e.rdb.Exists(context.Background(), append([]string{k.Stock, k.Sold, k.Num}, k.LockKeys()...)...).Val(); n != 0 {
			t.Errorf("idle item %s: %d of its keys left", sku, n)
		}
	}
	if got := e.rdb.ZRange(context.Background(), handlers.ItemsKey, 0, -1).Val(); !slices.Equal(got, []string{"3", "new"}) {
		t.Errorf("items now %v, want 3 and new", got)
	}
	mustDo(t, e, "GET", "/stock?sku=3", 200)
	// The room the idle items left is there for one more; then the bound.
	mustDo(t, e, "POST", "/reset?stock=5&sku=other", 200)
	if code, _, body := e.do(t, "POST", "/reset?stock=5&sku=more"); code != 409 || body["reason"] != contract.ReasonTooManyItems {
		t.Errorf("a 4th item with none idle: %d %v, want 409 too_many_items", code, body)
	}
}
