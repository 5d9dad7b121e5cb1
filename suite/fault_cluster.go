package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// clusterControl is a stack on a Redis Cluster whose masters can be
// killed (fault 8); *stack.Stack is one.
type clusterControl interface {
	KillClusterMaster(ctx context.Context, key string) (string, time.Time, error)
	WaitClusterFailover(ctx context.Context, key, killed string, since time.Time) (redisfam.ClusterFailover, error)
}

var _ clusterControl = (*stack.Stack)(nil)

// clusterFailover is fault 8: for each safe lock and each library rung on
// the one Redis, on a Redis Cluster of
// three masters and three replicas, the master of the item's slot is
// SIGKILLed a third of the way into the sales; its replica takes over once
// the other masters agree it is gone. Replication is asynchronous: a lock
// or a sale the master acknowledged but had not yet sent is lost, and
// with it the lock's safety. The row shows what it cost: how long the
// cluster did not serve, the answers lost, and whether anything was
// oversold. Each lock gets a stack of its own: the killed node stays down.
func (c *chaos) clusterFailover(ctx context.Context) ([]ChaosRow, error) {
	if !c.cfg.Stack.RealRedis() {
		if c.cfg.RequireReal {
			return nil, errors.New("a Redis Cluster needs redis-server (CI=true requires it)")
		}
		return []ChaosRow{{Fault: 8, Name: "cluster failover", Lock: "-", NotRun: 1, Errors: map[string]int{}, RecoveryMs: -1,
			Why:    []string{"needs redis-server: the embedded miniredis has no cluster mode"},
			Figure: "not run: needs redis-server", Want: "a run that measures the fault"}}, nil
	}
	// More requests than the other faults: while the cluster fails over,
	// every request fails fast, and the sales after it must still have
	// requests to run on.
	load := c.base
	load.Requests = 3 * load.Requests
	var rows []ChaosRow
	for _, lock := range c.locksFor("cluster failover") {
		fr := c.killClusterMaster(0.3)
		top, err := c.start(ctx, fr.sc, []string{lock})
		if err != nil {
			return rows, err
		}
		row, err := c.once(ctx, 8, "cluster failover", top, lock, load, func() faultRun { return fr })
		err = errors.Join(err, top.Stop())
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// killClusterMaster: SIGKILL the item's master at fraction at of the run
// and wait for its replica to take over. Once per stack: a second kill
// would find a master with no replica left.
func (c *chaos) killClusterMaster(at float64) faultRun {
	var (
		f        redisfam.ClusterFailover
		killedAt time.Time
		done     bool
	)
	sc := Scenario{
		Name: "cluster-failover", Cluster: 3,
		About: "a Redis Cluster of 3 masters and 3 replicas; the master of the item's slot SIGKILLed a third of the way in",
		Hooks: []Hook{{At: at, About: "SIGKILL the item's master", Do: func(ctx context.Context, t Stack) error {
			cc, ok := t.(clusterControl)
			if !ok {
				return errors.New("the stack runs no Redis Cluster")
			}
			if done {
				return errors.New("the item's master was killed once on this stack already: its replica has none")
			}
			done = true
			// The run's item: its keys are in the run's scope.
			key := inventory.ItemIn(guard.ScopeOf(ctx), "").Stock
			killed, at, err := cc.KillClusterMaster(ctx, key)
			if err != nil {
				return err
			}
			killedAt = at
			f, err = cc.WaitClusterFailover(ctx, key, killed, at)
			return err
		}}},
	}
	return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
		// The sales after the kill: those answered after it, which the
		// dead master cannot have made (but for an answer on its way at
		// the kill): they were made on the promoted replica, most by
		// requests that waited for the lock through the outage. Not
		// "after the last failed answer": a waiter that timed out on the
		// outage may answer 503 after the last item was sold.
		failed, okAfter := 0, 0
		killed := killedAt.Sub(r.Began)
		for _, op := range r.Ops {
			switch {
			case op.Code >= 500 || op.Code == 0:
				failed++
			case op.Code == 200 && !killedAt.IsZero() && time.Duration(op.Return) >= killed:
				okAfter++
			}
		}
		return ChaosRow{
			RecoveryMs: report.Ms(f.Took), Recovery: "SIGKILL of the item's master to its replica serving, every node ok",
			Figure: fmt.Sprintf("%s killed, %s promoted; %d of %d answers failed, %d sales after the kill; oversold %d, sold %d = stock gone %d",
				f.Killed, f.Promoted, failed, r.Requests, okAfter, r.Oversold, r.Sold, r.Initial-r.Remaining),
			Want: "the slot served again and selling; shown: the downtime and what the asynchronous replication lost (an oversell is the cluster's, not the lock's)",
			Pass: f.Took > 0 && okAfter > 0 && r.Verdict != bench.VerdictDeadlock,
		}
	}}
}
