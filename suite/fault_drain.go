package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/stack"
)

// drain: take one instance out the graceful way.
func (c *chaos) drain(_ string, at float64, inst int) faultRun {
	var rep stack.DrainReport
	sc := Scenario{
		Name: "drain", About: "SIGTERM one instance after taking it out of the load balancer",
		Hooks: []Hook{{At: at, About: "drain an instance", Do: func(ctx context.Context, t Stack) error {
			ic, ok := t.(instanceControl)
			if !ok {
				return errors.New("the stack cannot drain its instances")
			}
			var err error
			rep, err = ic.Drain(ctx, inst%ic.Instances())
			return err
		}}},
	}
	return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
		fromIt, all := 0, 0
		for _, op := range r.Ops {
			if op.Code >= 500 {
				all++
				if op.Instance == rep.Name {
					fromIt++
				}
			}
		}
		exact := r.Sold == int64(r.OK) && r.Sold == r.Initial-r.Remaining
		return ChaosRow{
			RecoveryMs: report.Ms(rep.Drain), Recovery: "SIGTERM to exit, its requests finished",
			Figure: fmt.Sprintf("5xx from %s: %d (5xx in all: %d); sold %d, ok %d; out of the LB in %s",
				rep.Name, fromIt, all, r.Sold, r.OK, rep.OutOfLB.Round(time.Millisecond)),
			Want: "zero 5xx from the drained instance; sold == ok",
			Pass: fromIt == 0 && exact && violations(r) == 0,
		}
	}}
}
