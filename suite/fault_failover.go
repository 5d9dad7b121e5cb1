package suite

import (
	"context"
	"fmt"
	"io"

	"github.com/lockladder/lockladder/failover"
	"github.com/lockladder/lockladder/internal/report"
)

// failover: fault 5, from package failover.
func (c *chaos) failover(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	for _, run := range []func(context.Context, int, io.Writer) (failover.Result, error){failover.SingleInstance, failover.Redlock} {
		c.p.Note(fmt.Sprintf("failover: %d trials", c.cfg.Trials))
		res, err := run(ctx, c.cfg.Trials, nil)
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
			row.Want = "shown: double grants (replication is asynchronous)"
			row.Pass = res.DoubleGrants > 0 && res.Trials == c.cfg.Trials
		}
		rows = append(rows, row)
	}
	return rows, nil
}
