package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/faultproxy"
)

// partitionControl is a stack with a proxy in front of each Redlock
// master, to cut it off (faults 6 and 7); *stack.Stack is one.
type partitionControl interface {
	MasterProxy(i int) *faultproxy.Proxy
}

var _ partitionControl = (*stack.Stack)(nil)

// partitions: cut 1, 2 then 3 of the 5 masters off the network, under
// redlock and the library rungs over the masters.
func (c *chaos) partitions(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	locks := c.partitionLocks()
	top, err := c.start(ctx, c.partition(1)(locks[0], 0.3, 0).sc, locks)
	if err != nil {
		return nil, err
	}
	defer top.Stop()
	for _, lock := range locks {
		for k := 1; k <= 3; k++ {
			row, err := c.once(ctx, 6, fmt.Sprintf("partition %d/5", k), top, lock, c.redlockBase(),
				func() faultRun { return c.partition(k)(lock, 0.3, 0) })
			if err != nil {
				return rows, err
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// partitionLocks are the locks over the masters: redlock, then the
// library rungs of Locks that are.
func (c *chaos) partitionLocks() []string {
	return append([]string{"redlock"}, c.libraries("partition")...)
}

// redlockBase is the size of a redlock run: it is slow under contention.
func (c *chaos) redlockBase() bench.Config {
	b := c.base
	b.Requests, b.Concurrency, b.Stock = min(b.Requests, 150), min(b.Concurrency, 20), min(b.Stock, 150)
	return b
}

// partitionWait is how long a request waits for redlock under a partition:
// a request that cannot reach a majority fails within it.
const partitionWait = 500 * time.Millisecond

// partition cuts the first k masters off at the run's moment at, and heals
// them after it.
func (c *chaos) partition(k int) func(lock string, at float64, inst int) faultRun {
	return func(lock string, at float64, _ int) faultRun {
		var cut time.Time
		sc := Scenario{
			Name: "partition", About: fmt.Sprintf("%d of 5 Redlock masters cut off the network", k),
			MasterProxies: true,
			AppArgs:       []string{"-lock-wait", partitionWait.String()},
			Hooks: []Hook{{At: at, About: fmt.Sprintf("cut %d masters", k),
				Do: func(ctx context.Context, t Stack) error {
					pc, ok := t.(partitionControl)
					if !ok {
						return errors.New("the stack has no proxies in front of its masters")
					}
					for i := range k {
						px := pc.MasterProxy(i)
						if px == nil {
							return fmt.Errorf("no proxy in front of master %d", i)
						}
						px.Cut()
					}
					cut = time.Now()
					return nil
				},
				Undo: func(ctx context.Context, t Stack) error {
					pc, ok := t.(partitionControl)
					if !ok {
						return nil
					}
					for i := range 5 {
						if px := pc.MasterProxy(i); px != nil {
							px.Heal()
						}
					}
					return nil
				}}},
		}
		return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
			after := int64(cut.Sub(r.Began))
			okAfter := 0
			var lat []time.Duration
			for _, op := range r.Ops {
				if op.Call < after {
					continue
				}
				switch op.Code {
				case 200:
					okAfter++
				case 503:
					lat = append(lat, time.Duration(op.Return-op.Call))
				}
			}
			p := percentile(lat, 0.99)
			row := ChaosRow{RecoveryMs: -1,
				Figure: fmt.Sprintf("after the cut: %d sold, %d 503s (p99 %s)", okAfter, len(lat), p.Round(time.Millisecond))}
			switch {
			case waitsForEveryMaster[lock]:
				// Every attempt lasts as long as the cut master's read
				// timeout: past the wait, so a request makes one.
				bound := partitionWait + masterReadTimeout + 500*time.Millisecond
				row.Want = fmt.Sprintf("nothing oversold; 503s within the %s wait and one attempt (a cut master's %s read timeout, +0.5s)", partitionWait, masterReadTimeout)
				row.Pass = p < bound && violations(r) == 0
				if k == 3 {
					row.Pass = row.Pass && len(lat) > 0
				}
			case k <= 2:
				row.Want = "still safe and selling"
				row.Pass = okAfter > 0 && violations(r) == 0
			default:
				row.Want = fmt.Sprintf("503s within the %s wait (+0.5s), nothing oversold", partitionWait)
				row.Pass = len(lat) > 0 && p < partitionWait+500*time.Millisecond && violations(r) == 0
			}
			return row
		}}
	}
}
