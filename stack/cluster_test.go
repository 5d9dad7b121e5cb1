package stack_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// TestClusterStartsOkAndStops: three masters and three replicas on six
// consecutive ports, every slot served, each replica following a master,
// a key written through a cluster client read back from its slot's
// master; after Stop nothing answers on any of the ports.
func TestClusterStartsOkAndStops(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if redistest.CI() {
			t.Fatal("redis-server not on PATH under CI=true")
		}
		t.Skip("redis-server not on PATH: a cluster needs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := redistest.FreeRun(t, 6)
	c, err := stack.StartCluster(ctx, "127.0.0.1", base, 3, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			c.Stop()
		}
	})
	addrs := c.Addrs()
	if len(addrs) != 6 || addrs[0] != "127.0.0.1:"+strconv.Itoa(base) || addrs[5] != "127.0.0.1:"+strconv.Itoa(base+5) {
		t.Fatalf("addresses %v, want six from %d upward", addrs, base)
	}
	t.Log(c.Summary())

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1]})
	defer cc.Close()
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 3 {
		t.Fatalf("%d shards, want 3", len(shards))
	}
	for _, s := range shards {
		if len(s.Nodes) != 2 {
			t.Fatalf("shard %v has %d nodes, want a master and a replica", s.Slots, len(s.Nodes))
		}
	}
	for i := range 30 {
		k := fmt.Sprintf("k%d", i)
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s: %d, %v", k, v, err)
		}
	}
	// The client side's slot function, which the tests' SlotGuard uses,
	// agrees with the server's.
	for _, k := range []string{"k1", "{item}:stock", "lock:{item}:stock:queue:live", "a{}b", "{}", "x{y"} {
		if got, want := redistest.Slot(k), int(cc.ClusterKeySlot(ctx, k).Val()); got != want {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
			conn.Close()
			t.Errorf("%s still answers after Stop", a)
		}
	}
}

// TestClusterNeedsThreeMasters: a smaller one is a clear error.
func TestClusterNeedsThreeMasters(t *testing.T) {
	_, err := stack.StartCluster(context.Background(), "127.0.0.1", 7000, 2, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "at least 3 masters") && !strings.Contains(err.Error(), "needs redis-server") {
		t.Fatalf("2 masters: %v, want an error", err)
	}
}
