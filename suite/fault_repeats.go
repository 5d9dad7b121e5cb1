package suite

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// repeats: faults 1 (any instance, holding the lock or not), 2, 3 (Redis,
// and PostgreSQL for its rungs) and 6 (2 of 5 cut) again and again, at random moments, against random
// instances, on the first two safe locks and the library rungs whose back
// end each strikes; a row per fault and lock sums them.
func (c *chaos) repeats(ctx context.Context) ([]ChaosRow, error) {
	type schedule struct {
		name  string
		locks []string
		mk    func(lock string, at float64, inst int) faultRun
		base  bench.Config
	}
	small := c.base
	small.Requests, small.Stock, small.Concurrency = min(small.Requests, 400), min(small.Stock, 150), min(small.Concurrency, 20)
	rl := c.redlockBase()
	rl.Requests, rl.Stock, rl.Concurrency = min(rl.Requests, 24), min(rl.Stock, 24), min(rl.Concurrency, 4)
	// Two safe rungs, one without and one with fencing, keep the suite
	// within minutes; -locks chooses others. The library rungs each run
	// the schedules that strike their back end.
	safe := c.safeLocks(2)
	scheds := []schedule{
		{"kill", append(slices.Clone(safe), c.libraries("kill")...), c.killAny, small},
		{"drain", append(slices.Clone(safe), c.libraries("drain")...), c.drain, small},
		{"redis-stop", append(slices.Clone(safe), c.libraries("redis-stop")...), c.redisStop, small},
		{"postgres-stop", c.libraries("postgres-stop"), c.postgresStop, small},
		{"partition 2/5", c.partitionLocks(), c.partition(2), rl},
	}
	var rows []ChaosRow
	for _, s := range scheds {
		if len(s.locks) == 0 {
			continue
		}
		top, err := c.start(ctx, s.mk(s.locks[0], 0.5, 0).sc, s.locks)
		if err != nil {
			return rows, err
		}
		for _, lock := range s.locks {
			if why := missingServer(top, lock); why != "" {
				rows = append(rows, notRun(7, "repeat "+s.name, lock, why))
				continue
			}
			began := time.Now()
			sum := ChaosRow{Fault: 7, Name: "repeat " + s.name, Lock: lock, Errors: map[string]int{}, RecoveryMs: -1,
				Want: fmt.Sprintf("no violation in %d runs at random moments", c.cfg.Repeats)}
			failed := 0
			for range c.cfg.Repeats {
				// One fault at a time: measured waits for the stack to be
				// whole again (the last victim back, and routed to)
				// before each run.
				at, inst := 0.1+0.6*c.rnd.Float64(), c.rnd.IntN(3)
				r, fr, m, err := c.measured(ctx, top, lock, s.base, func() faultRun { return s.mk(lock, at, inst) })
				if err != nil {
					top.Stop()
					return rows, err
				}
				sum.Retried += m.retried
				if m.why != "" {
					sum.NotRun++
					sum.Why = append(sum.Why, m.why)
					continue
				}
				one := c.line(7, s.name, r, fr.figure(r))
				sum.Runs++
				sum.Requests += one.Requests
				sum.OK += one.OK
				sum.Violations += one.Violations
				for k, v := range one.Errors {
					sum.Errors[k] += v
				}
				if one.RecoveryMs > sum.RecoveryMs {
					sum.RecoveryMs, sum.Recovery = one.RecoveryMs, "the longest: "+one.Recovery
				}
				if !one.Pass {
					failed++
				}
				sum.Rows = append(sum.Rows, r)
			}
			sum.Figure = fmt.Sprintf("%d of %d runs met the fault's own figure", sum.Runs-failed, sum.Runs)
			if sum.NotRun > 0 {
				sum.Figure += fmt.Sprintf("; %d not run: %s", sum.NotRun, sum.Why[0])
			}
			sum.Pass = sum.Violations == 0 && sum.NotRun == 0
			c.p.Note(fmt.Sprintf("repeat %s %s: %d runs in %s", s.name, lock, sum.Runs, time.Since(began).Round(100*time.Millisecond)))
			rows = append(rows, sum)
		}
		if err := top.Stop(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}
