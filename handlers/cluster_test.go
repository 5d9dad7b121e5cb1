package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// TestEveryRungOnACluster runs /sale and /testLock under every rung that
// keeps its lock in the main Redis, 30 requests at 10 concurrent each, on
// a real Redis Cluster through go-redis's cluster client: the safe rungs
// are exact, and no command or script of the lab names keys of two hash
// slots (the client-side guard and the server's CROSSSLOT agree: none).
// Every key the lab touches is in the item's slot. Redlock keeps its own
// independent masters and is not here.
func TestEveryRungOnACluster(t *testing.T) {
	addrs := redistest.StartCluster(t)
	guard := &redistest.SlotGuard{}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1], MaxRetries: -1, PoolSize: 64})
	cc.AddHook(guard)
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	// As the app does: the announcements come over the cluster client,
	// from the item's master (the channel carries the item's tag).
	no, err := notify.ClusterOptions(ctx, cc, inventory.ItemTag)
	if err != nil {
		t.Fatal(err)
	}
	n := notify.New(cc, no)
	t.Cleanup(func() { n.Close() })
	ladder := ladder.New(ladder.Backends{Redis: cc}, lock.Options{TTL: 2 * time.Second, Wait: 5 * time.Second,
		Retry: lock.FixedSleep(2 * time.Millisecond), Notifier: n}, lock.RedlockOptions{})
	gin.SetMode(gin.TestMode)
	router := handlers.New(handlers.Config{Instance: "c-1", Inventory: inventory.New(cc), Ladder: ladder, MaxStock: 1000,
		Hosts: []string{"example.com"}})
	do := func(method, target string) int {
		w := httptest.NewRecorder()
		router.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w.Code
	}
	const stock, requests, workers = 20, 30, 10
	for _, name := range []string{"none", "local", "setnx", "setnx-expire", "setnx-px", "check-del", "lua", "del-setnx", "getset", "reentrant", "fenced", "fair", "cohort", "cohort-carry", "atomic"} {
		t.Run(name, func(t *testing.T) {
			if code := do("POST", "/reset?stock=20"); code != 200 {
				t.Fatalf("reset: %d", code)
			}
			var sold, counted, other atomic.Int64
			var wg sync.WaitGroup
			var next atomic.Int64
			for range workers {
				wg.Go(func() {
					for next.Add(1) <= requests {
						switch do("POST", "/sale?lock="+name) {
						case http.StatusOK:
							sold.Add(1)
						case http.StatusConflict:
						default:
							other.Add(1)
						}
						if do("GET", "/testLock?lock="+name) == http.StatusOK {
							counted.Add(1)
						} else {
							other.Add(1)
						}
					}
				})
			}
			wg.Wait()
			snap, err := inventory.New(cc).Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if other.Load() != 0 {
				t.Errorf("%d answers neither 200 nor 409 (sold out)", other.Load())
			}
			if name == "none" || name == "local" {
				t.Logf("%s: %d sales of %d, num %d of %d (no lock across instances: not judged)", name, sold.Load(), stock, snap.Num, counted.Load())
				return
			}
			if sold.Load() != stock || snap.Stock != 0 || snap.Sold != stock || snap.Num != counted.Load() || counted.Load() != requests {
				t.Errorf("sold %d (stock %d), left %d, sold counter %d; num %d after %d increments: want exact",
					sold.Load(), stock, snap.Stock, snap.Sold, snap.Num, counted.Load())
			}
		})
	}
	if crossed := guard.Crossed(); len(crossed) > 0 {
		t.Errorf("%d commands named keys of two slots, e.g. %s", len(crossed), crossed[0])
	}
	slots := guard.Slots()
	select {
	case <-n.Ready():
	case <-time.After(5 * time.Second):
		t.Error("the notifier never subscribed on the cluster")
	}
	if item := redistest.Slot(inventory.KeyStock); len(slots) != 1 || slots[item] == 0 {
		t.Errorf("commands per slot %v, want all in the item's slot %d", slots, item)
	}
}

// TestItemsSpreadOverTheClusterMasters: items 1 to 9 hash to slots on
// every master of a 3-master cluster; /stock names each item's master,
// the sales of each item stay on its slot, and each item is exact.
func TestItemsSpreadOverTheClusterMasters(t *testing.T) {
	addrs := redistest.StartCluster(t)
	guard := &redistest.SlotGuard{}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1], MaxRetries: -1})
	cc.AddHook(guard)
	t.Cleanup(func() { cc.Close() })
	ladder := ladder.New(ladder.Backends{Redis: cc}, lock.Options{TTL: 2 * time.Second, Wait: 5 * time.Second,
		Retry: lock.FixedSleep(2 * time.Millisecond)}, lock.RedlockOptions{})
	gin.SetMode(gin.TestMode)
	e := &env{router: handlers.New(handlers.Config{Instance: "c-1", Inventory: inventory.New(cc), Ladder: ladder, MaxStock: 1000,
		Hosts: []string{"example.com"}})}
	mustDo(t, e, "POST", "/reset?stock=3&skus=9", 200)
	masters := map[string]int{}
	for _, sku := range inventory.SKUs(9) {
		for range 2 {
			mustDo(t, e, "POST", "/sale?lock=lua&sku="+sku, 200)
		}
		_, _, body := mustDo(t, e, "GET", "/stock?sku="+sku, 200)
		if body["stock"] != 1.0 || body["sold"] != 2.0 {
			t.Errorf("item %s: %v, want 1 left and 2 sold", sku, body)
		}
		m, _ := body["master"].(string)
		if m == "" {
			t.Fatalf("item %s: /stock names no master: %v", sku, body)
		}
		masters[m]++
	}
	if len(masters) != 3 {
		t.Errorf("items per master %v: want all 3 masters to hold some", masters)
	}
	if crossed := guard.Crossed(); len(crossed) > 0 {
		t.Errorf("%d commands named keys of two slots, e.g. %s", len(crossed), crossed[0])
	}
	if slots := guard.Slots(); len(slots) != 9 {
		t.Errorf("commands in %d slots, want one slot per item (9): %v", len(slots), slots)
	}
}
