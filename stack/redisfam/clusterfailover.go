package redisfam

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/redis/go-redis/v9"
)

// A failover of the Redis Cluster under load: the master that serves a
// key's slot is SIGKILLed, and its replica, which had whatever the
// asynchronous replication had sent it, takes over once the other masters
// agree the master is gone (cluster-node-timeout).

// ClusterFailover is what one failover took.
type ClusterFailover struct {
	Killed   string        // the master SIGKILLed
	Promoted string        // the replica that serves the slot now
	Took     time.Duration // from the SIGKILL to the slot served again, every live node ok
}

// KillMaster SIGKILLs the master that serves key's slot (no shutdown,
// nothing saved) and returns its address and when it was killed. The
// node stays down until Stop.
func (c *Cluster) KillMaster(ctx context.Context, key string) (string, time.Time, error) {
	addr, err := c.masterOf(ctx, key, "")
	if err != nil {
		return "", time.Time{}, err
	}
	// Its replica must be online and streaming (see streaming): a
	// kill before that promotes a replica with none of the item's keys,
	// which is not what this measures. The stack waits for it before the
	// apps start; after a failover the load itself caused (node timeouts
	// under a loaded CPU), the new pair may still be syncing.
	for i, n := range c.nodes {
		if n.Addr() == addr && i >= c.masters {
			c.lg.Printf("cluster: %s, started as a replica, serves %s's slot: the cluster failed over before the kill", addr, key)
		}
	}
	cl := redis.NewClient(&redis.Options{Addr: addr, Password: c.nodes[0].password, MaxRetries: -1})
	pctx, cancel := proc.WithDefaultTimeout(ctx, 10*time.Second)
	err = poll(pctx, func() error { return streaming(pctx, cl) })
	cl.Close()
	cancel()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("stack: cluster: before the kill: %w", err)
	}
	for _, n := range c.nodes {
		if n.Addr() != addr {
			continue
		}
		p := n.current()
		if p == nil || n.Down() {
			return "", time.Time{}, fmt.Errorf("stack: cluster node %s is not running", addr)
		}
		at := time.Now()
		if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
			return "", time.Time{}, fmt.Errorf("stack: cluster node %s: SIGKILL pid %d: %w", addr, p.Pid(), err)
		}
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			return "", time.Time{}, fmt.Errorf("stack: cluster node %s: pid %d survives SIGKILL", addr, p.Pid())
		}
		n.mu.Lock()
		n.isDown = true
		n.mu.Unlock()
		c.lg.Printf("cluster: SIGKILLed the master %s (pid %d) of %s's slot", addr, p.Pid(), key)
		return addr, at, nil
	}
	return "", time.Time{}, fmt.Errorf("stack: cluster: %s, the master of %s, is not one of the stack's nodes", addr, key)
}

// WaitFailover waits until a node other than killed serves key's slot
// as master and every live node says cluster_state:ok, and returns what
// the failover took, counted from since (the kill).
func (c *Cluster) WaitFailover(ctx context.Context, key, killed string, since time.Time) (ClusterFailover, error) {
	ctx, cancel := proc.WithDefaultTimeout(ctx, 30*time.Second)
	defer cancel()
	f := ClusterFailover{Killed: killed}
	err := poll(ctx, func() error {
		addr, err := c.masterOf(ctx, key, killed)
		if err != nil {
			return err
		}
		if addr == killed {
			return fmt.Errorf("%s still serves the slot", killed)
		}
		for _, n := range c.nodes {
			if n.Down() {
				continue
			}
			cl := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.password, MaxRetries: -1})
			info, err := cl.ClusterInfo(ctx).Result()
			cl.Close()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: not yet ok", n.Addr())
			}
		}
		f.Promoted = addr
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("stack: cluster failover of %s: %w", killed, err)
	}
	f.Took = time.Since(since)
	c.lg.Printf("cluster: %s serves %s's slot %s after the SIGKILL", f.Promoted, key, f.Took.Round(time.Millisecond))
	return f, nil
}

// masterOf asks a live node other than skip which node serves key's slot
// as master.
func (c *Cluster) masterOf(ctx context.Context, key, skip string) (string, error) {
	var last error
	for _, n := range c.nodes {
		if n.Down() || n.Addr() == skip {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.password, MaxRetries: -1, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second})
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every cluster, 7's included
			slots, err = cl.ClusterSlots(ctx).Result()
		}
		cl.Close()
		if err != nil {
			last = err
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				return s.Nodes[0].Addr, nil
			}
		}
		return "", fmt.Errorf("slot %d of %s is not served", slot, key)
	}
	return "", fmt.Errorf("stack: cluster: no live node answers: %v", last)
}

// streaming reports whether cl's master streams its writes to a replica:
// one is online and has acknowledged an offset past its sync. "online"
// alone is not enough: after a diskless sync the master holds the writes
// back until the replica's first REPLCONF ACK, sent once a second; a
// kill in that window promoted a replica with none of the item's keys
// (fault 8 under a loaded CPU did, docs/cluster.md).
func streaming(ctx context.Context, cl *redis.Client) error {
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	acked, err := ackedOffset(info)
	if err != nil {
		return fmt.Errorf("%s: %w", cl.Options().Addr, err)
	}
	if acked <= 0 {
		return fmt.Errorf("%s: its replica has acknowledged nothing since its sync", cl.Options().Addr)
	}
	return nil
}

// ackedOffset reads a master's INFO replication: the offset its online
// replica has acknowledged; an error when it is no master or has no
// replica online.
func ackedOffset(info string) (int64, error) {
	if !strings.Contains(info, "role:master") {
		return 0, errors.New("not a master")
	}
	acked := int64(-1)
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, "state=online") {
			continue
		}
		for _, f := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			if v, ok := strings.CutPrefix(f, "offset="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				acked = max(acked, n)
			}
		}
	}
	if acked < 0 {
		return 0, errors.New("no replica online")
	}
	return acked, nil
}
