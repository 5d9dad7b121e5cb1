package suite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/report"
)

// postgresBase is the size of postgres-stop's runs: three times the
// suite's requests, so that the load outlasts a restart of PostgreSQL
// (a second or more on a loaded machine: it starts, then lets the apps'
// role in again).
func (c *chaos) postgresBase() bench.Config {
	b := c.base
	b.Requests *= 3
	return b
}

// postgresDowntime is how long postgresStop keeps PostgreSQL down: a
// restart, not an outage, as long as backend-restart's in the matrix.
// The stop ends a holder's session under it; the row checks that nobody
// is let in while that holder still writes, which holds only while its
// section (a few milliseconds) ends before the server is back. With
// 200ms, once, on a loaded 2-core machine, the next holder entered
// while the first still wrote (pg-advisory's real flaw, which
// session-cut stages on purpose, not this row's lesson); a second is a
// margin of hundreds of sections.
const postgresDowntime = backendDowntime

// postgresStop: fault 3 for the rungs on PostgreSQL (the pg-advisory
// rungs), what redisStop is for the rungs on Redis: the server stopped
// mid-run (its immediate shutdown: every session ends at once, and none
// frees its advisory locks on the way down) and started again on the
// same port with its data.
// Requests that find it down fail with a 503 and change nothing; a
// holder whose session ends under it has a section of a few
// milliseconds left, while nobody can take the lock before the server
// is back (session-cut, in the matrix, is the slow holder's case).
func (c *chaos) postgresStop(_ string, at float64, _ int) faultRun {
	var down, stopped, back time.Time
	sc := Scenario{
		Name: "postgres-stop", About: "PostgreSQL stopped mid-run (every session ends) and started again with its data",
		Hooks: []Hook{{At: at, About: "stop and start PostgreSQL", Do: func(ctx context.Context, t Stack) error {
			bc, ok := t.(backendControl)
			if !ok {
				return errors.New("the stack cannot stop its PostgreSQL")
			}
			down = time.Now()
			if err := bc.StopBackend("postgres"); err != nil {
				return err
			}
			stopped = time.Now()
			time.Sleep(postgresDowntime)
			if err := bc.StartBackend("postgres"); err != nil {
				return err
			}
			back = time.Now()
			return nil
		}}},
	}
	return faultRun{sc: sc, figure: func(r bench.Row) ChaosRow {
		n503, p := refused(r)
		row := ChaosRow{
			RecoveryMs: -1, Recovery: "PostgreSQL back to the next sale through the lock",
			Figure: fmt.Sprintf("503 ×%d, p99 %s; PostgreSQL down %s (its stop took %s, its start %s); sold %d = stock gone %d",
				n503, p.Round(100*time.Microsecond), back.Sub(down).Round(time.Millisecond),
				stopped.Sub(down).Round(time.Millisecond), back.Sub(stopped.Add(postgresDowntime)).Round(time.Millisecond),
				r.Sold, r.Initial-r.Remaining),
			Want: "503s fast (p99 < 1s); stock and sold unchanged by them; sales again once it is back, if the load outlasts the restart",
		}
		// After the restart the pools in the instances dial again. A
		// restart slower than the rest of the load (seconds, on a loaded
		// machine) shows no recovery, only the outage's 503s.
		var last int64 // the last answer, from the run's start
		for _, op := range r.Ops {
			last = max(last, op.Return)
		}
		recovered := true
		if last > int64(back.Sub(r.Began)) {
			rec, ok := firstProgress(r, back)
			if ok {
				row.RecoveryMs = report.Ms(rec)
			}
			recovered = ok
		} else {
			row.Figure += "; the load ended before it was back"
		}
		if !recovered {
			row.Figure += "; no sale after it was back"
		}
		row.Pass = n503 > 0 && p < time.Second && recovered && violations(r) == 0
		return row
	}}
}
