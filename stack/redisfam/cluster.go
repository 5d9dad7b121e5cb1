package redisfam

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/internal/hashslot"
	"github.com/lockladder/lockladder/stack/proc"
	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster on loopback: n masters with one replica each,
// 2n redis-servers in cluster mode on consecutive ports from the first
// one upward (masters first, then their replicas in the same order), the
// slots split evenly among the masters. ready returns once every node
// reports cluster_state:ok and every replica follows its master. Only
// real redis-server does cluster mode: miniredis does not.
type Cluster struct {
	nodes   []*redisServer // masters, then replicas
	masters int
	lg      *proc.Logger
}

// clusterNodeTimeout is how long a master may be unreachable before its
// replica is promoted: short, so that a failover under load is seconds.
const clusterNodeTimeout = 2 * time.Second

// newCluster describes a cluster of masters masters (and as many
// replicas) on host, ports base, base+1, ..., each node's files in dir.
func newCluster(bin, host string, base, masters int, dir string, lg *proc.Logger) (*Cluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("stack: a Redis Cluster needs at least 3 masters, not %d", masters)
	}
	c := &Cluster{masters: masters, lg: lg}
	for i := range 2 * masters {
		port := strconv.Itoa(base + i)
		r, err := newRedisServer(bin, net.JoinHostPort(host, port), dir)
		if err != nil {
			return nil, err
		}
		r.extra = ClusterArgs(port)
		c.nodes = append(c.nodes, r)
	}
	return c, nil
}

// ClusterArgs are the options a cluster node on port runs with beyond a
// lone redis-server's (deploy/compose.cluster.yml's nodes run with the
// same).
func ClusterArgs(port string) []string {
	return []string{
		"--cluster-enabled", "yes",
		// In its --dir, where it may write; its start removes one an
		// earlier run left.
		"--cluster-config-file", "nodes-" + port + ".conf",
		"--cluster-node-timeout", strconv.Itoa(int(clusterNodeTimeout.Milliseconds())),
		// A replica takes over whatever its data's age: the lab measures
		// what a failover loses, it does not prevent it.
		"--cluster-replica-validity-factor", "0",
		"--cluster-require-full-coverage", "yes",
		// A replica's first sync starts at once, not after the default
		// 5s wait for more replicas to share it.
		"--repl-diskless-sync-delay", "0",
	}
}

// slots is the range of hash slots master i serves: an even split.
func (c *Cluster) slots(i int) (lo, hi int) {
	return i * hashslot.Slots / c.masters, (i+1)*hashslot.Slots/c.masters - 1
}

// Addrs is every node's address, masters first, then their replicas in
// the same order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

func (c *Cluster) Start(ctx context.Context) error {
	// Every start is a new cluster: a node's start removes the cluster
	// config an earlier run left.
	return proc.Each(len(c.nodes), func(i int) error { return c.nodes[i].Start(ctx) })
}

// Ready waits for every node, then forms the cluster: each meets the
// first, the masters take their slots, the replicas follow their masters,
// and every node agrees the cluster is ok.
func (c *Cluster) Ready(ctx context.Context) error {
	if err := proc.Each(len(c.nodes), func(i int) error { return c.nodes[i].Ready(ctx) }); err != nil {
		return err
	}
	ctx, cancel := proc.WithDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.password, MaxRetries: -1})
		defer clients[i].Close()
	}
	first := c.nodes[0]
	port, _ := strconv.Atoi(first.port)
	for _, cl := range clients[1:] {
		if err := cl.ClusterMeet(ctx, first.host, strconv.Itoa(port)).Err(); err != nil {
			return fmt.Errorf("stack: cluster: CLUSTER MEET: %w", err)
		}
	}
	for i := range c.masters {
		lo, hi := c.slots(i)
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("stack: cluster: CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, c.nodes[i].Addr(), err)
		}
	}
	ids := make([]string, c.masters)
	for i := range c.masters {
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("stack: cluster: CLUSTER MYID: %w", err)
		}
		ids[i] = id
	}
	// A replica can follow its master once it knows it (gossip).
	for i := range c.masters {
		replica := clients[c.masters+i]
		if err := poll(ctx, func() error {
			return replica.Do(ctx, "CLUSTER", "REPLICATE", ids[i]).Err()
		}); err != nil {
			return fmt.Errorf("stack: cluster: %s CLUSTER REPLICATE %s: %w", c.nodes[c.masters+i].Addr(), c.nodes[i].Addr(), err)
		}
	}
	for i, cl := range clients {
		if err := poll(ctx, func() error { return clusterOK(ctx, cl, len(c.nodes)) }); err != nil {
			return fmt.Errorf("stack: cluster: %s: %w", c.nodes[i].Addr(), err)
		}
	}
	// Each master streams its writes to its replica before the apps
	// write anything: one write in its slots, which its replica then
	// acknowledges.
	for i, cl := range clients[:c.masters] {
		lo, hi := c.slots(i)
		tag, _ := hashslot.TagIn("stack", lo, hi)
		if err := cl.Set(ctx, tag+":ready", 1, 0).Err(); err != nil {
			return fmt.Errorf("stack: cluster: %s: SET %s:ready: %w", c.nodes[i].Addr(), tag, err)
		}
		if err := poll(ctx, func() error { return streaming(ctx, cl) }); err != nil {
			return fmt.Errorf("stack: cluster: %s: %w", c.nodes[i].Addr(), err)
		}
	}
	return nil
}

// clusterOK reports whether cl's node sees the whole cluster (nodes of
// them, every slot served) as ok, and, if it is a replica, its master's
// link as up.
func clusterOK(ctx context.Context, cl *redis.Client, nodes int) error {
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return err
	}
	for _, want := range []string{"cluster_state:ok", "cluster_known_nodes:" + strconv.Itoa(nodes), "cluster_slots_ok:" + strconv.Itoa(hashslot.Slots)} {
		if !strings.Contains(info, want) {
			return fmt.Errorf("not yet %s", want)
		}
	}
	repl, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return errors.New("replica not yet in sync with its master")
	}
	return nil
}

// poll calls f every 50ms until it succeeds or ctx ends, and returns its
// last error with ctx's.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops every node by its pid.
func (c *Cluster) Stop() error {
	return proc.Each(len(c.nodes), func(i int) error { return c.nodes[i].Stop() })
}

// Masters is how many masters it started with.
func (c *Cluster) Masters() int { return c.masters }

// Kind names its nodes' server and version: "redis-server VERSION".
func (c *Cluster) Kind() string { return c.nodes[0].Kind() }

// Pids lists its nodes' running processes.
func (c *Cluster) Pids() []int {
	var pids []int
	for _, n := range c.nodes {
		if pid := n.Pid(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Summary says what runs where.
func (c *Cluster) Summary() string {
	return fmt.Sprintf("Redis Cluster of %d masters and %d replicas (%s) on %s", c.masters, len(c.nodes)-c.masters,
		c.nodes[0].Kind(), strings.Join(c.Addrs(), ","))
}

// ClusterBusOffset: a cluster node also listens on its port + 10000, for
// the other nodes.
const ClusterBusOffset = 10000

// StartCluster starts a Redis Cluster of masters masters and as many
// replicas on host, on ports base to base+2*masters-1 (and their cluster
// bus ports, 10000 higher), with its files in dir, and returns once it is
// ok. It needs redis-server on PATH: miniredis has no cluster mode.
func StartCluster(ctx context.Context, host string, base, masters int, dir string) (*Cluster, error) {
	bin, err := proc.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("stack: a Redis Cluster needs redis-server on PATH (the embedded miniredis has no cluster mode): %w", err)
	}
	if base < 1 || base+2*masters-1+ClusterBusOffset > 65535 {
		return nil, fmt.Errorf("stack: cluster ports %d to %d (and their bus ports, 10000 higher) are out of range", base, base+2*masters-1)
	}
	c, err := newCluster(bin, host, base, masters, dir, nil)
	if err != nil {
		return nil, err
	}
	if err := proc.Launch(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// LaunchCluster starts a cluster of masters masters (and as many
// replicas) requiring password of its clients, from addr's port upward,
// or from a free run of ports when that is 0, with its files in dir, and
// logs its summary line to lg.
func LaunchCluster(ctx context.Context, addr string, masters int, dir, password string, lg *proc.Logger) (*Cluster, error) {
	bin, err := proc.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("stack: a Redis Cluster needs redis-server on PATH (the embedded miniredis has no cluster mode): %w", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	fixed, _ := strconv.Atoi(port)
	for attempt := 1; ; attempt++ {
		base := fixed
		if base == 0 {
			if base, err = FreePortRun(host, 2*masters); err != nil {
				return nil, err
			}
		}
		c, err := newCluster(bin, host, base, masters, dir, lg)
		if err != nil {
			return nil, err
		}
		for _, n := range c.nodes {
			n.password = password
		}
		err = proc.Launch(ctx, c)
		if err == nil {
			lg.Printf("%s", c.Summary())
			return c, nil
		}
		// Ports picked free may be taken before a node binds them (a test
		// package starting its servers at the same moment): another run.
		if fixed != 0 || attempt == 3 || !strings.Contains(err.Error(), "already in use") && !errors.Is(err, ErrPortTaken) {
			return nil, err
		}
	}
}

// FreePortRun finds n consecutive free ports on host whose cluster bus
// ports (10000 higher) are free too, and returns the first. It looks
// below the kernel's usual ephemeral range (32768 up), where outgoing
// connections do not take ports from under it; still, the ports are free
// only until someone binds them.
func FreePortRun(host string, n int) (int, error) {
	for range 100 {
		base := 10000 + rand.IntN(22000-10000-n)
		if allFree(host, base, n) && allFree(host, base+ClusterBusOffset, n) {
			return base, nil
		}
	}
	return 0, fmt.Errorf("stack: no run of %d free ports on %s", n, host)
}

func allFree(host string, base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
