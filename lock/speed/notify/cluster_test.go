package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// TestClusterNotifierHearsEveryMaster: on a Redis Cluster, whose keyspace
// events are each node's own, a notify waiter of any item's lock wakes on
// its release, wherever the item's slot lives (items 1 to 9 cover all
// three masters); the fallback tick (5s and more) never gets a chance.
// With the handoff channel's subscription alone, only the items on that
// channel's master would.
func TestClusterNotifierHearsEveryMaster(t *testing.T) {
	addrs := redistest.StartCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1], MaxRetries: -1})
	t.Cleanup(func() { cc.Close() })
	ctx := context.Background()
	if err := cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		return notify.EnableKeyspaceEvents(ctx, node)
	}); err != nil {
		t.Fatal(err)
	}
	o, err := notify.ClusterOptions(ctx, cc, inventory.ItemTag)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Anchors) != 2 {
		t.Fatalf("anchors %v: want one on each of the 2 masters not the handoff channel's", o.Anchors)
	}
	o.Fallback = 10 * time.Second
	n := notify.New(cc, o)
	t.Cleanup(func() { n.Close() })
	select {
	case <-n.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("notifier: no subscription after 10s")
	}
	l := lock.NewLua(cc, lock.Options{TTL: 30 * time.Second, Wait: 20 * time.Second, WaitMode: lock.WaitNotify, Notifier: n})
	masters := map[string]bool{}
	for _, sku := range inventory.SKUs(9) {
		key := inventory.ItemOf(sku).StockLock
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr] = true
		a, err := l.Obtain(ctx, key, lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		b := locktest.ObtainAsync(ctx, l, key)
		time.Sleep(50 * time.Millisecond) // b has tried once and sleeps
		released := time.Now()
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-b
		if got.Err != nil {
			t.Fatalf("item %s: %v", sku, got.Err)
		}
		if woke := got.At.Sub(released); woke > 3*time.Second {
			t.Errorf("item %s (master %s): took the lock %s after the release: no keyspace event reached it", sku, m.Options().Addr, woke)
		}
		got.L.Release(ctx)
	}
	if len(masters) != 3 {
		t.Errorf("items on masters %v: want all 3", masters)
	}
}
