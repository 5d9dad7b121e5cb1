package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/faultproxy"
)

// redisControl is a stack whose Redis can be stopped and started again,
// and slowed through a proxy in front of it (faults 3, 4 and 7);
// *stack.Stack is one.
type redisControl interface {
	StopRedis(ctx context.Context) error
	StartRedis(ctx context.Context) error
	RedisProxy() *faultproxy.Proxy
}

var _ redisControl = (*stack.Stack)(nil)

// redisStop: Redis shut down mid-run and started again.
func (c *chaos) redisStop(lock string, at float64, _ int) faultRun {
	var down, back, healthy time.Time
	sc := Scenario{
		Name: "redis-stop", About: "Redis shut down mid-run (SHUTDOWN SAVE) and started again with its data",
		Hooks: []Hook{{At: at, About: "stop and start Redis", Do: func(ctx context.Context, t Stack) error {
			rc, ok := t.(redisControl)
			if !ok {
				return errors.New("the stack cannot stop its Redis")
			}
			down = time.Now()
			if err := rc.StopRedis(ctx); err != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond) // down for a while, not just a blink
			if err := rc.StartRedis(ctx); err != nil {
				return err
			}
			back = time.Now()
			if err := untilHealthy(ctx, t, 10*time.Second); err != nil {
				return err
			}
			healthy = time.Now()
			return nil
		}}},
	}
	return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
		n503, p := refused(r)
		balanced := violations(r) == 0
		row := ChaosRow{
			RecoveryMs: report.Ms(healthy.Sub(back)), Recovery: "Redis back to every instance healthy",
			Figure: fmt.Sprintf("503 ×%d, p99 %s; Redis down %s; sold %d = stock gone %d",
				n503, p.Round(100*time.Microsecond), back.Sub(down).Round(time.Millisecond), r.Sold, r.Initial-r.Remaining),
			Want: "503s fast (p99 < 1s); stock and sold unchanged by them",
			Pass: n503 > 0 && p < time.Second && balanced,
		}
		if waitsOutOutages[lock] {
			// No 503 is no sign that the fault missed: the hook stopped
			// Redis, and the waiters tried again until it was back.
			row.Want = "the outage waited out within the wait: any 503 fast (p99 < 1s); stock and sold unchanged by them"
			row.Pass = p < time.Second && balanced
		}
		return row
	}}
}

// untilHealthy waits until the load balancer and every instance answer
// GET /healthz with 200.
func untilHealthy(ctx context.Context, t Stack, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return bench.Settle(ctx, t)
}

// refused counts a run's 503s and the 99th percentile of their answer
// times: how fast an outage is told (faults 3 and postgres-stop).
func refused(r bench.Row) (int, time.Duration) {
	var lat []time.Duration
	for _, op := range r.Ops {
		if op.Code == 503 {
			lat = append(lat, time.Duration(op.Return-op.Call))
		}
	}
	return len(lat), percentile(lat, 0.99)
}
