package stack_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// TestClusterStartsOkAndStops: three masters and three replicas on six
// consecutive ports, every slot served, each replica following a master,
// a key written through a cluster client read back from its slot's
// master; after Stop nothing answers on any of the ports.
func TestClusterStartsOkAndStops(t *testing.T) {
	redistest.NeedServer(t, "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := redistest.FreeRun(t, 6)
	c, err := redisfam.StartCluster(ctx, "127.0.0.1", base, 3, t.TempDir())
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
	_, err := redisfam.StartCluster(context.Background(), "127.0.0.1", 7000, 2, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "at least 3 masters") && !strings.Contains(err.Error(), "needs redis-server") {
		t.Fatalf("2 masters: %v, want an error", err)
	}
}

// TestStackOnACluster: Config.Cluster runs the stack on a Redis Cluster:
// the instances sell through it, Pids lists its six nodes, StopRedis says
// it has no one Redis to stop, and after Stop none of them runs.
func TestStackOnACluster(t *testing.T) {
	s, _ := startStack(t, stack.Real, func(c *stack.Config) {
		c.Cluster, c.Masters, c.Instances = 3, -1, 2
		c.ZooKeeper, c.MariaDB, c.Etcd = stack.Off, stack.Off, stack.Off
	})
	if n := len(s.ClusterAddrs()); n != 6 {
		t.Fatalf("%d cluster nodes, want 6", n)
	}
	if s.RedisAddr() != s.ClusterAddrs()[0] {
		t.Errorf("RedisAddr %s, want the first node %s", s.RedisAddr(), s.ClusterAddrs()[0])
	}
	if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=5"); code != 200 {
		t.Fatalf("reset: %d %s", code, body)
	}
	for range 7 {
		get(t, http.MethodPost, s.URL()+"/sale?lock=fenced")
	}
	if st := readStock(t, s.URL()); st.Stock != 0 || st.Sold != 5 {
		t.Fatalf("after 7 sales of 5: %+v", st)
	}
	if err := s.StopRedis(context.Background()); err == nil || !strings.Contains(err.Error(), "Cluster") {
		t.Errorf("StopRedis on a cluster: %v, want an error saying why", err)
	}
	pids := s.Pids()
	if len(pids) != 6+2+1 {
		t.Errorf("pids %v: want 6 nodes, 2 instances and nginx", pids)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	redistest.Dead(t, pids)
}

// TestClusterConfigRefused: too few masters, the embedded Redis or a
// proxy in front of one Redis are clear errors, before anything starts.
func TestClusterConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		edit func(*stack.Config)
		want string
	}{
		{func(c *stack.Config) { c.Cluster = 2 }, "at least 3 masters"},
		{func(c *stack.Config) { c.Cluster, c.Redis = 3, stack.Embedded }, "needs redis-server"},
		{func(c *stack.Config) { c.Cluster, c.RedisProxy = 3, true }, "not a cluster"},
	} {
		cfg := stack.Config{LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0", AppBinary: "/nonexistent"}
		tc.edit(&cfg)
		if _, err := stack.Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", cfg, err, tc.want)
		}
	}
}
