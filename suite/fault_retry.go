package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// retryTrap: Redis slower than the client's read timeout, in pulses, with
// go-redis's default retries and with the app's setting.
func (c *chaos) retryTrap(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	for _, retries := range []string{"3", "-1"} {
		sc := Scenario{
			Name: "retry-trap", About: "Redis replies 150ms late in pulses; the client's read timeout is 100ms",
			RedisProxy: true,
			AppArgs:    []string{"-redis-timeout", "100ms", "-redis-retries", retries},
			Hooks: []Hook{{At: 0.05, About: "slow Redis in pulses", Do: func(ctx context.Context, t Stack) error {
				rc, ok := t.(redisControl)
				if !ok || rc.RedisProxy() == nil {
					return errors.New("the stack has no proxy in front of Redis")
				}
				px := rc.RedisProxy()
				defer px.SetLatency(0)
				for range 10 {
					px.SetLatency(150 * time.Millisecond)
					if !bench.Sleep(ctx, 40*time.Millisecond) {
						return nil
					}
					px.SetLatency(0)
					if !bench.Sleep(ctx, 160*time.Millisecond) {
						return nil
					}
				}
				return nil
			}}},
		}
		top, err := c.start(ctx, sc, nil)
		if err != nil {
			return rows, err
		}
		// Every request must find stock, or a sale run twice could hide
		// behind a sold out.
		base := c.base
		base.Requests, base.Stock, base.Concurrency = 3000, 3000, 20
		row, err := c.once(ctx, 4, "retry-trap", top, "atomic", base, func() faultRun {
			return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
				gone, maybe := r.Initial-r.Remaining, r.MaybeApplied()
				fig := ChaosRow{RecoveryMs: -1, Figure: fmt.Sprintf("-redis-retries %s: sold %d vs ok %d + possibly applied %d", retries, gone, r.OK, maybe)}
				if retries == "3" {
					fig.Want = "shown: sold > ok + possibly applied (a script run twice)"
					fig.Pass = gone > int64(r.OK)+maybe
				} else {
					fig.Want = "sold <= ok + possibly applied, never more"
					fig.Pass = gone <= int64(r.OK)+maybe && violations(r) == 0
				}
				return fig
			}}
		})
		top.Stop()
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}
