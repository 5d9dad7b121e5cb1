package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/bench/history"
)

// faultRun is one fault's scenario and how to read its figure off the run.
type faultRun struct {
	sc     Scenario
	figure func(r bench.Row) ChaosRow // Fault, Name, Lock, counts and checks are filled in by the caller
	// applied, if set, says whether the fault struck while the run could
	// still show its effect (an error wrapping errNotApplied if not): a
	// run that measured nothing, tried again as measured does.
	applied func(r bench.Row) error
}

// perLock runs a fault once for each of its locks (locksFor), on one
// stack, each run of base's size.
func (c *chaos) perLock(ctx context.Context, f int, name string, base bench.Config, mk func(lock string, at float64, inst int) faultRun) ([]ChaosRow, error) {
	locks := c.locksFor(name)
	if len(locks) == 0 {
		return nil, nil
	}
	top, err := c.start(ctx, mk(locks[0], 0.3, 1).sc, locks)
	if err != nil {
		return nil, err
	}
	defer top.Stop()
	var rows []ChaosRow
	for _, lock := range locks {
		row, err := c.once(ctx, f, name, top, lock, base, func() faultRun { return mk(lock, 0.3, 1) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// once is a row of one measured run of mk's fault (see measured), or a
// row that says why none could be measured.
func (c *chaos) once(ctx context.Context, f int, name string, top Stack, lock string, base bench.Config, mk func() faultRun) (ChaosRow, error) {
	if why := missingServer(top, lock); why != "" {
		return notRun(f, name, lock, why), nil
	}
	r, fr, m, err := c.measured(ctx, top, lock, base, mk)
	if err != nil {
		return ChaosRow{}, err
	}
	if m.why != "" {
		row := notRun(f, name, lock, m.why)
		row.Retried = m.retried
		return row, nil
	}
	row := c.line(f, name, r, fr.figure(r))
	row.Retried = m.retried
	return row, nil
}

// notRun is the row of a fault that measured nothing for lock, and why.
func notRun(f int, name, lock, why string) ChaosRow {
	return ChaosRow{Fault: f, Name: name, Lock: lock, NotRun: 1, Why: []string{why},
		Errors: map[string]int{}, RecoveryMs: -1, Figure: "not run: " + why, Want: "a run that measures the fault"}
}

// attempts is how many times a run that measured nothing is tried.
const attempts = 3

// measurement says how getting a run went: how many runs were tried
// again, and why none measured anything ("" when the last one did).
type measurement struct {
	retried int
	why     string
}

// measured runs the fault mk makes (a fresh one each try) until a run
// measures something: a run whose fault could not be applied as planned
// (errNotApplied), whose stack was not whole again in time (bench.ErrNotReady),
// or whose answers were mostly the load balancer's 502/504 (instances down:
// it says nothing about the lock) is tried again, up to attempts times in
// all. Other errors end the suite: they are the lab's bugs.
func (c *chaos) measured(ctx context.Context, top Stack, lock string, base bench.Config, mk func() faultRun) (bench.Row, faultRun, measurement, error) {
	var m measurement
	for try := range attempts {
		if try > 0 {
			m.retried++
		}
		fr := mk()
		r, err := c.run(ctx, fr.sc, top, lock, base)
		switch {
		case errors.Is(err, errNotApplied) || errors.Is(err, bench.ErrNotReady):
			m.why = err.Error()
			c.p.Note(fmt.Sprintf("%s/%s: measured nothing (%v); trying again", fr.sc.Name, lock, err))
			continue
		case err != nil:
			return bench.Row{}, fr, m, err
		}
		if fr.applied != nil {
			if err := fr.applied(r); err != nil {
				m.why = err.Error()
				c.p.Note(fmt.Sprintf("%s/%s: measured nothing (%v); trying again", fr.sc.Name, lock, err))
				continue
			}
		}
		if lb := lbFailures(r); lb*2 > r.Requests {
			m.why = fmt.Sprintf("%d of %d answers were the load balancer's 502/504 or no answer: instances were down, the run says nothing about the lock", lb, r.Requests)
			c.p.Note(fmt.Sprintf("%s/%s: measured nothing (%s); trying again", fr.sc.Name, lock, m.why))
			continue
		}
		m.why = ""
		return r, fr, m, nil
	}
	return bench.Row{}, faultRun{}, m, nil
}

// lbFailures counts the requests the load balancer answered for a missing
// instance (502, 504) or that got no answer at all.
func lbFailures(r bench.Row) int {
	n := 0
	for _, op := range r.Ops {
		if op.Code == 0 || op.Code == 502 || op.Code == 504 {
			n++
		}
	}
	return n
}

// start starts the fault's stack, with the servers its locks need.
func (c *chaos) start(ctx context.Context, sc Scenario, locks []string) (Stack, error) {
	sCfg := sc.stackConfig(MatrixConfig{Stack: c.cfg.Stack, RequireReal: c.cfg.RequireReal})
	sCfg = withServers(sCfg, c.cfg.Stack, locks)
	top, err := c.cfg.Start(ctx, sCfg)
	if err != nil {
		return nil, fmt.Errorf("starting the stack for %s: %w", sc.Name, err)
	}
	return top, nil
}

// run loads lock on top under sc and returns the judged row.
func (c *chaos) run(ctx context.Context, sc Scenario, top Stack, lock string, base bench.Config) (bench.Row, error) {
	rows, _, err := runScenario(ctx, sc, top, base, []matrixPair{{lock, bench.EndpointSale, ""}}, c.p)
	if err != nil {
		return bench.Row{}, err
	}
	if len(rows) != 1 {
		return bench.Row{}, fmt.Errorf("%s/%s: the app does not offer the lock", sc.Name, lock)
	}
	return rows[0], nil
}

// line fills a chaos row from one run and the fault's figure.
func (c *chaos) line(f int, name string, r bench.Row, fig ChaosRow) ChaosRow {
	fig.Fault, fig.Name, fig.Lock, fig.Runs = f, name, r.Lock, 1
	fig.Requests, fig.OK, fig.Errors = r.Requests, r.OK, errorClasses(r.Ops)
	fig.Violations = violations(r)
	fig.Rows = []bench.Row{r}
	return fig
}

// violations counts what the run's checks found.
func violations(r bench.Row) int {
	n := r.Overlaps
	if r.Linearizable == string(history.Illegal) {
		n++
	}
	if !r.Balanced() {
		n++
	}
	return n
}

// errNotApplied marks a fault that could not be applied as planned (the
// holder to kill never held the lock): the run measures nothing.
var errNotApplied = errors.New("fault not applied")

// firstProgress is how long after t the first sale got through the lock
// (a 200, or a 409 sold out, answered after t).
func firstProgress(r bench.Row, t time.Time) (time.Duration, bool) {
	after := int64(t.Sub(r.Began))
	first := int64(-1)
	for _, op := range r.Ops {
		if (op.Outcome == history.Applied || op.Outcome == history.SoldOut) && op.Call >= after {
			if first < 0 || op.Return < first {
				first = op.Return
			}
		}
	}
	if first < 0 {
		return 0, false
	}
	return time.Duration(first - after), true
}

// errorClasses counts the failed requests by class (see ChaosRow.Errors).
func errorClasses(ops []history.Op) map[string]int {
	m := map[string]int{}
	for _, op := range ops {
		switch {
		case op.Code == 200 || op.Code == 409:
		case op.Code == 0:
			m["conn"]++
		case op.Code == 503 && op.Outcome == history.Rejected:
			m["503 lock"]++
		case op.Code == 503:
			m["503 redis"]++
		case op.Code == 502 || op.Code == 504:
			m[strconv.Itoa(op.Code)]++
		case op.Code >= 500:
			m["5xx"]++
		default:
			m["4xx"]++
		}
	}
	return m
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
