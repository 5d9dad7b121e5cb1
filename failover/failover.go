package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/stack/sentinel"
)

const (
	// LeaseTTL is A's (and B's) lease: far longer than any failover here,
	// so that A still holds the lock by its own account when B asks.
	LeaseTTL = 30 * time.Second
	// BWait bounds B's Obtain: the lock is free at once or never.
	BWait = time.Second
	// Masters is how many independent masters the redlock trials use.
	Masters = 5
	// Key is the lock every trial contends for.
	Key = "lockladder:failover"
)

// failoverWait bounds one trial's wait for the sentinels to promote the
// replica; a trial that takes longer is an error, never a pass.
const failoverWait = 30 * time.Second

// Result is what a series of trials showed, read back from Redis.
type Result struct {
	Lock         string // one of SingleLocks (one primary behind Sentinel) or "redlock"
	Trials       int    // trials run to the end
	DoubleGrants int    // trials in which B was granted the lock while A's lease was still valid
	// Failover is the median time from the SIGKILL to a new primary every
	// sentinel names (lua), or to the killed master answering again, empty
	// (redlock).
	Failover time.Duration
	Note     string // what the trials did and found, in a sentence
}

// outcome is one trial's.
type outcome struct {
	double   bool
	failover time.Duration
	aLeft    time.Duration // A's remaining lease when B's Obtain returned
	heldA    int           // redlock: masters that held A's token after its grant
	maxB     int           // redlock: the most masters B could then win
}

// SingleLocks are the rungs SingleInstance runs: each keeps its lock as
// one key on one Redis (SET NX PX with a random token, released by a
// compare-and-delete), the lab's lua and the libraries that write the
// same: go-redsync/redsync over one pool, bsm/redislock, and redislock
// with its Refresh loop.
var SingleLocks = []string{"lua", "redsync", "redislock", "redislock-refresh"}

// SingleInstance runs trials of the single-instance lock name (one of
// SingleLocks, from ladder.New, over a go-redis FailoverClient)
// against a primary with an async replica and three sentinels, the
// primary SIGKILLed right after it granted A the lock and before the
// grant replicated. Progress lines go to log (nil: discarded). A trial
// that cannot be carried out as designed (the cut leaked the key to the
// replica, no failover within 30s, ...) ends the series with an error;
// the Result then counts the trials completed before it.
func SingleInstance(ctx context.Context, name string, trials int, log io.Writer) (Result, error) {
	res := Result{Lock: name}
	if !slices.Contains(SingleLocks, name) {
		return res, fmt.Errorf("failover: no single-instance lock %q (there are %s)", name, strings.Join(SingleLocks, ", "))
	}
	outs, err := run(ctx, trials, log, name, func(ctx context.Context, logf func(string, ...any)) (outcome, error) {
		return singleTrial(ctx, name, logf)
	})
	res.Trials, res.DoubleGrants, res.Failover = tally(outs)
	if len(outs) > 0 {
		res.Note = fmt.Sprintf("A's grant never reached the replica (replication cut), the primary was SIGKILLed and the sentinels promoted the replica "+
			"(median %s): B was granted the same key in %d of %d trials while A's %s lease still had at least %s to run",
			res.Failover.Round(time.Millisecond), res.DoubleGrants, res.Trials, LeaseTTL, minLeft(outs).Round(time.Millisecond))
	}
	return res, err
}

// Redlock runs trials of "redlock" (ladder.New over five independent
// redis-servers): A obtains the lock, one master that holds A's token is
// SIGKILLed at once and restarted empty on the same port (nothing is
// persisted, as the failed-over primary), and B tries the same key. Errors
// and log as SingleInstance.
func Redlock(ctx context.Context, trials int, log io.Writer) (Result, error) {
	res := Result{Lock: "redlock"}
	outs, err := run(ctx, trials, log, "redlock", redlockTrial)
	res.Trials, res.DoubleGrants, res.Failover = tally(outs)
	if len(outs) > 0 {
		minHeld, maxB := Masters, 0
		for _, o := range outs {
			minHeld, maxB = min(minHeld, o.heldA), max(maxB, o.maxB)
		}
		res.Note = fmt.Sprintf("A held the key on at least %d of %d masters; one of them was SIGKILLed and restarted empty (median %s), "+
			"so B could win at most %d of %d (quorum %d): B was granted the key in %d of %d trials",
			minHeld, Masters, res.Failover.Round(time.Millisecond), maxB, Masters, lock.Quorum(Masters), res.DoubleGrants, res.Trials)
	}
	return res, err
}

type trialFunc func(ctx context.Context, log func(string, ...any)) (outcome, error)

func run(ctx context.Context, trials int, w io.Writer, name string, trial trialFunc) ([]outcome, error) {
	if trials <= 0 {
		return nil, fmt.Errorf("failover: %d trials", trials)
	}
	if w == nil {
		w = io.Discard
	}
	var outs []outcome
	for i := 1; i <= trials; i++ {
		logf := func(format string, args ...any) {
			fmt.Fprintf(w, "%s trial %d/%d: %s\n", name, i, trials, fmt.Sprintf(format, args...))
		}
		o, err := trial(ctx, logf)
		if err != nil {
			return outs, fmt.Errorf("failover: %s trial %d of %d: %w", name, i, trials, err)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func tally(outs []outcome) (trials, doubles int, median time.Duration) {
	var ds []time.Duration
	for _, o := range outs {
		if o.double {
			doubles++
		}
		ds = append(ds, o.failover)
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		median = ds[len(ds)/2]
		if len(ds)%2 == 0 {
			median = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
		}
	}
	return len(outs), doubles, median
}

func minLeft(outs []outcome) time.Duration {
	m := LeaseTTL
	for _, o := range outs {
		m = min(m, o.aLeft)
	}
	return m
}

// direct is a client to one server, for reading back; reads are
// idempotent, so it may retry (a restarted server broke its connection).
func direct(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: password, MaxRetries: 3, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, PoolSize: 2,
	})
}

// lockerOf is the named rung of a ladder over rdb and masters.
func lockerOf(name string, rdb redis.Cmdable, masters []redis.Cmdable, ttl, wait time.Duration) (lock.Locker, error) {
	_, l, ok := ladder.New(ladder.Backends{Redis: rdb, Masters: masters}, lock.Options{TTL: ttl, Wait: wait}, lock.RedlockOptions{}).Lookup(name)
	if !ok || l == nil {
		return nil, fmt.Errorf("no %q lock in the ladder", name)
	}
	return l, nil
}

// valueOn reads Key on c: "" when it is not there.
func valueOn(ctx context.Context, c *redis.Client) (string, error) {
	v, err := c.Get(ctx, Key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

func short(token string) string {
	if len(token) > 8 {
		return token[:8]
	}
	if token == "" {
		return "(none)"
	}
	return token
}

func singleTrial(ctx context.Context, name string, logf func(string, ...any)) (o outcome, err error) {
	g, err := sentinel.Start(ctx, sentinel.Config{})
	if err != nil {
		return o, err
	}
	defer func() { err = errors.Join(err, g.Stop()) }()
	old, err := g.PrimaryAddr(ctx)
	if err != nil {
		return o, err
	}
	replica := g.ReplicaAddr()
	pc, rc := direct(old, g.Password()), direct(replica, g.Password())
	defer pc.Close()
	defer rc.Close()
	failoverClient := func() *redis.Client {
		// Retries off, as the app's client: a command whose reply was
		// lost may have run.
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: g.MasterName(), SentinelAddrs: g.SentinelAddrs(),
			Password: g.Password(), SentinelPassword: g.Password(),
			MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, PoolSize: 4,
		})
	}
	a, b := failoverClient(), failoverClient()
	defer a.Close()
	defer b.Close()
	lockA, err := lockerOf(name, a, nil, LeaseTTL, 2*time.Second)
	if err != nil {
		return o, err
	}
	lockB, err := lockerOf(name, b, nil, LeaseTTL, BWait)
	if err != nil {
		return o, err
	}
	// A has found the primary through the sentinels and has a connection
	// to it: its grant is one round trip.
	if err := a.Ping(ctx).Err(); err != nil {
		return o, fmt.Errorf("client A: %w", err)
	}

	g.ReplicationLink().Cut()
	start := time.Now()
	lkA, err := lockA.Obtain(ctx, Key, lock.Call{})
	if err != nil {
		return o, fmt.Errorf("client A: %w", err)
	}
	tokenA, err := valueOn(ctx, pc) // read back where A was granted it
	if err != nil || tokenA == "" {
		return o, fmt.Errorf("client A was granted the lock, but the primary %s holds %q (%v)", old, tokenA, err)
	}
	if err := g.KillPrimary(); err != nil {
		return o, err
	}
	// Nothing can reach the replica any more: it must not have the key.
	if v, err := valueOn(ctx, rc); err != nil || v != "" {
		return o, fmt.Errorf("the replica %s holds %q (%v) after the primary died: the cut did not hold back A's grant", replica, v, err)
	}
	wctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	now, took, err := g.WaitFailover(wctx, old)
	if err != nil {
		return o, err
	}
	o.failover = took
	if now != replica {
		return o, fmt.Errorf("the sentinels promoted %s, not the replica %s", now, replica)
	}
	if v, err := valueOn(ctx, rc); err != nil || v != "" {
		return o, fmt.Errorf("the new primary %s holds %q (%v) before B asked", now, v, err)
	}

	lkB, errB := lockB.Obtain(ctx, Key, lock.Call{})
	o.aLeft = LeaseTTL - time.Since(start)
	if errB != nil && !errors.Is(errB, lock.ErrNotObtained) {
		return o, fmt.Errorf("client B: %w", errB)
	}
	held, err := valueOn(ctx, rc) // read back what B's grant left
	if err != nil {
		return o, err
	}
	if errB == nil && (held == "" || held == tokenA) {
		return o, fmt.Errorf("client B was granted the lock, but the new primary holds %q (A's token %q)", held, tokenA)
	}
	o.double = errB == nil && o.aLeft > 0
	verdict := "not granted"
	if o.double {
		verdict = "DOUBLE GRANT"
	} else if errB == nil {
		verdict = "granted after A's lease ran out"
	}
	// A finds out only now, if it looks: its release finds B's token.
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	relA := lkA.Release(rctx)
	rcancel()
	if lkB != nil {
		lkB.Release(ctx)
	}
	logf("A granted on %s (token %s), replica without it; primary SIGKILLed; sentinels promoted %s in %s; B %s (token %s on %s) with A's lease %s from its end; A's release: %v",
		old, short(tokenA), now, took.Round(time.Millisecond), verdict, short(held), now, o.aLeft.Round(time.Millisecond), relAString(relA))
	return o, nil
}

func relAString(err error) string {
	if err == nil {
		return "released"
	}
	return err.Error()
}

func redlockTrial(ctx context.Context, logf func(string, ...any)) (o outcome, err error) {
	m, err := startMasters(ctx, time.Second, false)
	defer func() { err = errors.Join(err, m.close()) }()
	if err != nil {
		return o, err
	}
	a, err := m.grantA(ctx, LeaseTTL, 2*time.Second)
	if err != nil {
		return o, err
	}
	victim := slices.Index(a.tokens, a.token)
	o.heldA = a.held()
	o.maxB = 1 + Masters - o.heldA // the restarted master and those A never had

	// SIGKILL it: no shutdown, then back on the same port, empty.
	servers := m.servers
	addr, pid := servers[victim].Addr(), servers[victim].Pid()
	killed := time.Now()
	if err := servers[victim].Crash(); err != nil {
		return o, fmt.Errorf("master %d: %w", victim, err)
	}
	if err := servers[victim].Restart(ctx); err != nil {
		return o, fmt.Errorf("master %d again on %s: %w", victim, addr, err)
	}
	o.failover = time.Since(killed)
	if v, err := valueOn(ctx, m.reads[victim]); err != nil || v != "" {
		return o, fmt.Errorf("master %d restarted holding %q (%v), want it empty", victim, v, err)
	}

	lkB, err := m.obtainB(ctx, LeaseTTL, BWait)
	o.aLeft = a.left()
	if err != nil {
		return o, err
	}
	after, err := m.tokens(ctx)
	if err != nil {
		return o, err
	}
	bQuorum := false
	for _, t := range after {
		if t != "" && t != a.token && count(after, t) >= lock.Quorum(Masters) {
			bQuorum = true
		}
	}
	if (lkB != nil) != bQuorum {
		return o, fmt.Errorf("client B was granted the lock: %v, but the masters hold %q (A's token %q)", lkB != nil, after, a.token)
	}
	o.double = lkB != nil && o.aLeft > 0
	verdict := "not granted"
	if o.double {
		verdict = "DOUBLE GRANT"
	} else if lkB != nil {
		verdict = "granted after A's validity ran out"
	}
	others := Masters - count(after, a.token) - count(after, "")
	logf("A granted on %d of %d masters (token %s); master %d (%s, pid %d) SIGKILLed and back empty in %s; B %s (at most %d of %d reachable); after B: A's token on %d, another on %d; A's release: %s",
		o.heldA, Masters, short(a.token), victim, addr, pid, o.failover.Round(time.Millisecond), verdict, o.maxB, Masters,
		count(after, a.token), others, releaseBoth(ctx, a, lkB))
	return o, nil
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
