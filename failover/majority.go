package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockladder/lockladder/lock"
)

// Recovery is how the majority-crash trials bring the crashed masters back
// (docs/ladder.md, rung 10; article 002).
type Recovery string

const (
	// RestartEmpty restarts them at once with nothing persisted: the
	// majority that granted A forgets it.
	RestartEmpty Recovery = "restart-empty"
	// RestartAOF runs the masters with an append-only file fsynced on
	// every write (appendfsync always): restarted at once, they remember.
	RestartAOF Recovery = "aof"
	// RestartDelayed restarts them empty, but only once a whole lease has
	// passed (Redlock's "delayed restart"): A's validity is over by then.
	RestartDelayed Recovery = "delayed"
)

// MajorityTTL is A's lease in the delayed restart's trials: short, since
// a delayed restart waits a whole lease. In the others A holds LeaseTTL,
// far longer than any crash and restart here, so that A still holds the
// lock by its own account when B asks, however loaded the machine (a 1s
// lease ran out under load while three masters came back, and hid the
// double grant the trial exists to show).
const MajorityTTL = time.Second

// majorityLease is A's lease in rec's trials.
func majorityLease(rec Recovery) time.Duration {
	if rec == RestartDelayed {
		return MajorityTTL
	}
	return LeaseTTL
}

// RedlockMajority runs trials of "redlock" over five redis-servers in
// which A obtains the lock, then a majority of the masters that hold A's
// token (3 of 5) are SIGKILLed and brought back as rec says, and B tries
// the same key. Without persistence and delay B is granted while A still
// holds: the double grant Redlock's critics show; with either, it is not.
// Errors and log as SingleInstance.
func RedlockMajority(ctx context.Context, trials int, rec Recovery, log io.Writer) (Result, error) {
	switch rec {
	case RestartEmpty, RestartAOF, RestartDelayed:
	default:
		return Result{}, fmt.Errorf("failover: recovery %q: want %s, %s or %s", rec, RestartEmpty, RestartAOF, RestartDelayed)
	}
	res := Result{Lock: "redlock " + string(rec)}
	outs, err := run(ctx, trials, log, "redlock "+string(rec), func(ctx context.Context, logf func(string, ...any)) (outcome, error) {
		return majorityTrial(ctx, rec, logf)
	})
	res.Trials, res.DoubleGrants, res.Failover = tally(outs)
	if len(outs) > 0 {
		res.Note = fmt.Sprintf("A held the key on a majority; %d of %d masters holding it were SIGKILLed and restarted (%s, median %s back): "+
			"B was granted the key while A's %s lease still ran in %d of %d trials",
			lock.Quorum(Masters), Masters, rec, res.Failover.Round(time.Millisecond), majorityLease(rec), res.DoubleGrants, res.Trials)
	}
	return res, err
}

func majorityTrial(ctx context.Context, rec Recovery, logf func(string, ...any)) (o outcome, err error) {
	m, err := startMasters(ctx, 500*time.Millisecond, rec == RestartAOF)
	defer func() { err = errors.Join(err, m.close()) }()
	if err != nil {
		return o, err
	}
	a, err := m.grantA(ctx, majorityLease(rec), time.Second)
	if err != nil {
		return o, err
	}
	o.heldA = a.held()
	var victims []int
	for i, t := range a.tokens {
		if t == a.token && len(victims) < lock.Quorum(Masters) {
			victims = append(victims, i)
		}
	}

	killed := time.Now()
	for _, i := range victims {
		if err := m.servers[i].Crash(); err != nil {
			return o, fmt.Errorf("master %d: %w", i, err)
		}
	}
	if rec == RestartDelayed {
		select {
		case <-time.After(MajorityTTL):
		case <-ctx.Done():
			return o, ctx.Err()
		}
	}
	for _, i := range victims {
		if err := m.servers[i].Restart(ctx); err != nil {
			return o, fmt.Errorf("master %d: %w", i, err)
		}
	}
	o.failover = time.Since(killed)
	kept := 0
	for _, i := range victims {
		if v, err := valueOn(ctx, m.reads[i]); err != nil {
			return o, fmt.Errorf("master %d after the restart: %w", i, err)
		} else if v == a.token {
			kept++
		}
	}

	lkB, err := m.obtainB(ctx, majorityLease(rec), 200*time.Millisecond)
	o.aLeft = a.left()
	if err != nil {
		return o, err
	}
	o.double = lkB != nil && o.aLeft > 0
	o.maxB = Masters - o.heldA + len(victims) - kept
	verdict := "not granted"
	switch {
	case o.double:
		verdict = "DOUBLE GRANT"
	case lkB != nil:
		verdict = "granted after A's validity ran out"
	}
	logf("A granted on %d of %d masters (token %s); masters %v SIGKILLed and back in %s (%s), %d of them still holding A's token; B %s, A's validity left %s; A's release: %s",
		o.heldA, Masters, short(a.token), victims, o.failover.Round(time.Millisecond), rec, kept, verdict,
		o.aLeft.Round(time.Millisecond), releaseBoth(ctx, a, lkB))
	return o, nil
}
