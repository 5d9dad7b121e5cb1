package suite

import (
	"context"
	"fmt"
	"io"

	"github.com/lockladder/lockladder/failover"
	"github.com/lockladder/lockladder/internal/report"
)

// failover: fault 5, from package failover: the single-instance locks
// (lua, then the library rungs of cfg.Locks on the one Redis), then
// redlock over the masters.
func (c *chaos) failover(ctx context.Context) ([]ChaosRow, error) {
	type series struct {
		lock string
		run  func(context.Context, int, io.Writer) (failover.Result, error)
	}
	var all []series
	for _, l := range append([]string{"lua"}, c.libraries("failover")...) {
		all = append(all, series{l, func(ctx context.Context, n int, w io.Writer) (failover.Result, error) {
			return failover.SingleInstance(ctx, l, n, w)
		}})
	}
	all = append(all, series{"redlock", failover.Redlock})
	var rows []ChaosRow
	for _, s := range all {
		c.p.Note(fmt.Sprintf("failover: %s, %d trials", s.lock, c.cfg.Trials))
		res, err := s.run(ctx, c.cfg.Trials, nil)
		if err != nil {
			return rows, err
		}
		row := ChaosRow{
			Fault: 5, Name: "failover", Lock: res.Lock, Runs: res.Trials, Errors: map[string]int{},
			Violations: res.DoubleGrants, RecoveryMs: report.Ms(res.Failover),
			Figure: fmt.Sprintf("double grants %d of %d", res.DoubleGrants, res.Trials),
		}
		if res.Lock == "redlock" {
			row.Recovery = "SIGKILL to the master answering again, empty (median)"
			row.Want = "no double grant"
			row.Pass = res.DoubleGrants == 0 && res.Trials == c.cfg.Trials
		} else {
			row.Recovery = "SIGKILL to the replica promoted (median)"
			row.Want = failoverWant[res.Lock]
			row.Pass = res.DoubleGrants > 0 && res.Trials == c.cfg.Trials
		}
		rows = append(rows, row)
	}
	// A majority of Redlock's masters crash (article 002): forgotten
	// grants unless the masters persist them or come back a lease later.
	// Five trials each at most: a trial starts five servers, and the
	// delayed one waits a lease; the outcome does not vary (3 of 3
	// double grants empty, 0 of 3 otherwise, in TestRedlockMajorityCrash).
	trials := min(c.cfg.Trials, 5)
	for _, rec := range []failover.Recovery{failover.RestartEmpty, failover.RestartAOF, failover.RestartDelayed} {
		c.p.Note(fmt.Sprintf("failover: redlock majority crash, %s: %d trials", rec, trials))
		res, err := failover.RedlockMajority(ctx, trials, rec, nil)
		if err != nil {
			return rows, err
		}
		row := ChaosRow{
			Fault: 5, Name: "majority crash", Lock: res.Lock, Runs: res.Trials, Errors: map[string]int{},
			Violations: res.DoubleGrants, RecoveryMs: report.Ms(res.Failover),
			Recovery: "SIGKILL of 3 of 5 masters to all 3 answering again (median)",
			Figure:   fmt.Sprintf("double grants %d of %d", res.DoubleGrants, res.Trials),
		}
		if rec == failover.RestartEmpty {
			row.Want = "shown: double grants (the majority forgot A)"
			row.Pass = res.DoubleGrants > 0 && res.Trials == trials
		} else {
			row.Want = "no double grant"
			row.Pass = res.DoubleGrants == 0 && res.Trials == trials
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// failoverWant is what a Sentinel failover that loses the key does to
// each single-instance lock: every one keeps its lock as one key on the
// primary its client reaches, so the promoted replica, which never had
// the key, grants it again while the first holder's lease runs. The
// libraries add nothing that could notice: redsync over one pool is one
// vote of one, and redislock's Refresh extends only a key that is there
// (it finds none, stops, and A's Release then says not held, after B
// has the lock).
var failoverWant = map[string]string{
	"lua":               "shown: double grants (replication is asynchronous)",
	"redsync":           "shown: double grants (one pool: the new primary is the whole quorum)",
	"redislock":         "shown: double grants (replication is asynchronous)",
	"redislock-refresh": "shown: double grants (Refresh extends only a key that is there)",
}
