package stack

import (
	"context"
	"errors"
	"time"

	"github.com/lockladder/lockladder/stack/proc"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// The stack's Redis, from its side: the one server or the cluster, and
// the Redlock masters (package redisfam runs them).

// DefaultMasters is how many Redlock masters a stack starts when
// Config.Masters is 0: five, so that the redlock rung survives two lost.
const DefaultMasters = 5

// MastersEnv is the environment variable that carries the Redlock masters
// to every instance, as a comma-separated list of addresses (the same list
// as its -masters flag).
const MastersEnv = "REDLOCK_MASTERS"

// startCluster starts Config.Cluster's cluster from RedisAddr's port
// upward, or from a free run of ports when that is 0.
func (s *Stack) startCluster(ctx context.Context) (*redisfam.Cluster, error) {
	ctx, cancel := proc.WithDefaultTimeout(ctx, s.cfg.StartTimeout) // its nodes' waits, together
	defer cancel()
	c, err := redisfam.LaunchCluster(ctx, s.cfg.RedisAddr, s.cfg.Cluster, s.dir, s.redisPass, s.lg)
	if err != nil {
		return nil, err
	}
	s.servers = append(s.servers, c)
	return c, nil
}

// MasterAddrs are the host:port addresses of the Redlock masters, in the
// order the instances get them (-masters), stopped ones included; none
// when Config.Masters is negative.
func (s *Stack) MasterAddrs() []string { return s.masters.Addrs() }

// KillClusterMaster SIGKILLs the master that serves key's slot (no
// shutdown, nothing saved) and returns its address. The node stays down
// until the stack stops.
func (s *Stack) KillClusterMaster(ctx context.Context, key string) (string, time.Time, error) {
	if s.cluster == nil {
		return "", time.Time{}, errors.New("stack: KillClusterMaster: the stack runs one Redis, not a cluster")
	}
	return s.cluster.KillMaster(ctx, key)
}

// WaitClusterFailover waits until a node other than killed serves key's
// slot as master and every live node says cluster_state:ok, and returns
// what the failover took, counted from since (the kill).
func (s *Stack) WaitClusterFailover(ctx context.Context, key, killed string, since time.Time) (redisfam.ClusterFailover, error) {
	if s.cluster == nil {
		return redisfam.ClusterFailover{}, errors.New("stack: WaitClusterFailover: the stack runs one Redis, not a cluster")
	}
	return s.cluster.WaitFailover(ctx, key, killed, since)
}
