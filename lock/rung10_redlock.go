package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redlock takes rung 6's lock (SET key token NX PX ttl, compare-and-delete
// release) on N independent masters at once, and holds it only with a
// majority of them, within the time the lease still has to run
// (docs/ladder.md, rung 10).
//
// The race it fixes is the single Redis: one master with an async replica
// can lose a granted lock on failover, and a second client then gets it.
// Here no single master decides. Each attempt reads the clock before the
// first master (T1) and after the last (T2), asks every master in parallel
// with a short per-node timeout, and wins when Quorum(N) masters said yes
// and validity = TTL - (T2 - T1) - drift is still positive (drift = TTL/100
// + 2ms, for clock drift between the masters). Otherwise it releases the
// lock on every master that may hold it (those that said yes, failed or
// did not answer) and tries again after a random delay. With 5 masters it
// stays safe with up to 2 lost.
//
// How it waits matters more here than anywhere else on the ladder. When
// many clients try at once, each wins some masters and none wins a
// majority (a split vote); all give back what they won and try again
// together. The articles' retry (wait=fixed: 100 requests, each retrying
// every 10ms) spends most attempts that way: about a hundred sales a
// second, and 503s. So redlock lines up (WaitQueue) a process's
// requests for one key in memory, first come first served, and only the
// head of the line asks the masters; 3 processes put 3 contenders on the
// masters, not 100. Releases are announced on the masters
// (RedlockOptions.Notifier), so every process's head tries as soon as the
// lock frees, without polling. The algorithm is unchanged: every critical
// section still holds its own majority-granted lease.
//
// Its default, WaitRelay, also relays the lock down the line through the
// masters: a section that ends with another request waiting swaps its
// token for that request's on every master, with a fresh lease, in one
// script each (rung10_redlock_relay.go), instead of a release on five and
// a SET NX on five. The swap is a Redlock attempt like any other (T1, T2,
// a majority within validity, or nothing is handed over), so every
// section still holds a lease of its own from a majority, and when the
// masters go the sales stop; it costs 7 round trips a section instead of
// 12. A chain ends after 64 sections or half a lease, and the lock goes
// back to every process's head.
//
// WaitCohort goes one step further (rung 13's idea): a section that ends
// with another request in its line passes the lock on in memory, while
// more than half its validity is left, instead of releasing it on five
// masters for the next to take it on five again. The quorum is then paid
// once for many sections; each still runs within the lease's validity, at
// least half of it left when it starts.
//
// What it still shows (Kleppmann): it assumes bounded pauses, network
// delays and clock drift. A holder paused past its validity (GC, SIGSTOP)
// still believes it holds the lock while another client takes it: two
// holders. And if a majority of masters restart without persistence (AOF
// with fsync), they forget the lock and grant it again.
type Redlock struct {
	counts
	nodes       []redlockNode
	opts        Options
	nodeTimeout time.Duration
	drift       time.Duration
	pause       time.Duration
	notifier    *Notifier
	line        localQueue
	workers     workers
}

var _ Locker = (*Redlock)(nil)

type redlockNode struct {
	rdb  redis.Cmdable
	name string // "node 2 (127.0.0.1:6391)", for errors
}

// Quorum is how many of n masters a Redlock must hold: a strict majority,
// n/2+1, so that two holders can never both have one.
func Quorum(n int) int { return n/2 + 1 }

// RedlockOptions are what Redlock takes besides Options. Zero values take
// the defaults.
type RedlockOptions struct {
	// NodeTimeout bounds how long one attempt (or one release) waits for
	// each master. It must be short next to the TTL: a master that does
	// not answer in time counts as a failure, so that a dead one cannot
	// eat the lease. Default TTL/10 (200ms for the default 2s TTL:
	// generous on loopback under load, and a dead master costs no more
	// than that).
	NodeTimeout time.Duration
	// QueuePause is how long the head of a process's line (WaitQueue)
	// pauses between two tries when nothing wakes it sooner, jittered in
	// [d/2, 3d/2). Default 2ms: a few heads, one per process, so a short
	// pause wastes little and leaves a freed lock idle for little.
	QueuePause time.Duration
	// Notifier, subscribed to one of the masters (with its keyspace events
	// on: EnableKeyspaceEvents), wakes the head of each process's line
	// when the lock's key is deleted there: when the lock frees, the heads
	// of every process try at once, and the head in the releasing process
	// has no head start. Without it the heads poll every QueuePause.
	// (Options.Notifier listens to another Redis: Redlock ignores it.)
	Notifier *Notifier
}

// NewRedlock returns the Redlock over masters, independent Redis servers
// (no replication between them), named in errors by their index in
// masters and, for a *redis.Client, its address. Options.Retry is
// jittered: each pause is drawn at random in [d/2, 3d/2). T1 and T2 are
// read from Options.Clock; only their difference counts, so a clock that
// runs a constant amount ahead changes nothing. It panics without masters.
func NewRedlock(masters []redis.Cmdable, o Options, ro RedlockOptions) *Redlock {
	if len(masters) == 0 {
		panic("lock: NewRedlock needs at least one master")
	}
	o = o.withDefaults()
	retry := o.Retry
	o.Retry = func() Backoff { return spread{retry()} }
	// Options.Notifier hears another Redis than the masters: WaitNotify
	// polls with Options.Backoff here, and WaitQueue listens to
	// RedlockOptions.Notifier.
	o.Notifier = nil
	r := &Redlock{
		opts:        o,
		nodeTimeout: ro.NodeTimeout,
		drift:       o.TTL/100 + 2*time.Millisecond,
		pause:       ro.QueuePause,
		notifier:    ro.Notifier,
	}
	if r.nodeTimeout <= 0 {
		r.nodeTimeout = o.TTL / 10
	}
	if r.pause <= 0 {
		r.pause = queuePause
	}
	for i, rdb := range masters {
		name := fmt.Sprintf("node %d", i)
		if c, ok := rdb.(interface{ Options() *redis.Options }); ok {
			name = fmt.Sprintf("node %d (%s)", i, c.Options().Addr)
		}
		r.nodes = append(r.nodes, redlockNode{rdb: rdb, name: name})
	}
	return r
}

// Obtain tries the lock on every master until one attempt wins a quorum
// within validity, or the wait ends. By default (WaitRelay, as WaitQueue
// and WaitCohort) it first waits for its turn in this process's line for
// key, and may find the lock relayed to it; the wait bound covers both.
// The Lock it returns also has Validity() time.Duration. On ErrNotObtained
// the error also tells how the last attempt went, with each failed
// master's error.
func (r *Redlock) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound, ttl := r.opts.bound(c), c.ttl(r.opts.TTL)
	if bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	token := uuid.NewString()

	var (
		w    waiter
		head *turn // our place at the head of the line (WaitQueue)
	)
	mode := r.opts.mode(c)
	if mode == "" {
		mode = WaitRelay
	}
	switch mode {
	case WaitFixed, WaitBackoff, WaitNotify:
		w = r.opts.waiter(c, key)
	default:
		var err error
		if head, err = r.line.wait(ctx, key, bound); err != nil {
			return nil, err
		}
		if l := r.passedTo(head, key); l != nil {
			return l, nil
		}
		w = headWaiter(r.notifier, key, r.pause)
	}

	var (
		validity time.Duration
		t1       time.Time
		last     error   // why the last attempt failed
		ends     settled // the winning attempt's SETs, some maybe still on their way
	)
	err := acquire(ctx, r.opts, c, w, func(ctx context.Context) (bool, error) {
		t1 = r.opts.Clock()
		// Once a majority said yes with validity left, the attempt has
		// won: a master that has not answered (cut off, say) is not
		// waited for; if it sets our token after all, the release, which
		// asks every master once its SET has ended, removes it. A losing
		// attempt waits for every answer: its give-back must not
		// overtake a SET still on its way.
		won := func(yes, _ int) bool {
			return yes >= Quorum(len(r.nodes)) && ttl-r.opts.Clock().Sub(t1)-r.drift > 0
		}
		var (
			votes votes
			errs  []error
		)
		votes, errs, ends = r.round(ctx, nil, nil, true, won, func(ctx context.Context, rdb redis.Cmdable) (bool, error) {
			return rdb.SetNX(ctx, key, token, ttl).Result()
		})
		t2 := r.opts.Clock()
		validity = ttl - t2.Sub(t1) - r.drift
		held := votes.yes()
		if held >= Quorum(len(r.nodes)) && validity > 0 {
			return true, nil
		}
		if last == nil || ctx.Err() == nil {
			// An attempt cut short by the end of the wait says less
			// than the complete one before it: keep that.
			last = fmt.Errorf("redlock: last attempt held %s on %d of %d masters (quorum %d), validity %s",
				key, held, len(r.nodes), Quorum(len(r.nodes)), validity)
			if len(errs) > 0 {
				last = fmt.Errorf("%w: %w", last, errors.Join(errs...))
			}
		}
		r.retries.Add(1)
		// Give back what this attempt may have got, even when ctx has
		// ended: a minority left behind would block everyone until it
		// expires. A master that said no holds nothing of ours.
		if mask := votes.maybeOurs(); mask != nil {
			r.onAll(context.WithoutCancel(ctx), mask, nil, releaser(key, token))
		}
		return false, nil
	})
	if err != nil {
		head.leave()
		if errors.Is(err, ErrNotObtained) && last != nil {
			return nil, fmt.Errorf("%w; %w", err, last)
		}
		return nil, err
	}
	// Valid until t1 + the TTL - drift: validity counts from t1 too.
	l := &redlockLock{r: r, key: key, token: token, validity: validity, until: t1.Add(ttl - r.drift), head: head, ends: ends}
	switch mode {
	case WaitCohort:
		l.cohort = &redlockLease{token: token, until: l.until, half: t1.Add((ttl - r.drift) / 2), ends: ends}
	case WaitRelay:
		l.chain = &relayChain{id: token, n: 1, start: t1, ttl: ttl}
	}
	return l, nil
}

// redlockLease is a majority-granted lock passed from one section to the
// next in a process's line (WaitCohort): the token on the masters, when
// its validity ends, and when half of it has gone.
type redlockLease struct {
	token       string
	until, half time.Time
	ends        settled // the SETs that granted it
}

// passedTo returns the lock the head before head passed on (WaitCohort)
// or relayed to it (WaitRelay), as a section of its own, or nil. A lease
// that ran out meanwhile (the waiter it was passed to gave up and nobody
// came for a while) is given back.
func (r *Redlock) passedTo(head *turn, key string) *redlockLock {
	var l *redlockLock
	switch v := head.take().(type) {
	case nil:
		return nil
	case *redlockLease:
		l = &redlockLock{r: r, key: key, token: v.token, until: v.until, cohort: v, ends: v.ends}
	case *redlockLock:
		l = v
	}
	l.head = head
	if l.validity = l.until.Sub(r.opts.Clock()); l.validity <= 0 {
		r.round(context.Background(), nil, l.ends, false, nil, l.releaser())
		return nil
	}
	return l
}

type redlockLock struct {
	r        *Redlock
	key      string
	token    string
	validity time.Duration
	until    time.Time     // when validity ends
	head     *turn         // nil unless WaitQueue, WaitCohort or WaitRelay: left on Release
	cohort   *redlockLease // WaitCohort: may be passed on
	chain    *relayChain   // WaitRelay: may be relayed
	released atomic.Bool   // a second Release must not touch a lock passed on
	ends     settled       // the round that set our token: a release on a master waits for it
}

// Validity is how long the lock was still safe to rely on when Obtain
// returned: TTL - acquisition time - drift. Past it, another client may
// hold the lock.
func (l *redlockLock) Validity() time.Duration { return l.validity }

// Release deletes the lock on every master that still holds our token. It
// succeeds when a quorum of masters did; otherwise it returns ErrNotHeld,
// joined with each failed master's error. Keys left on masters that failed
// lapse with their TTL. Then the next request in this process's line may
// try.
func (l *redlockLock) Release(ctx context.Context) error {
	if l.released.Swap(true) {
		return fmt.Errorf("%w: redlock: %s already released", ErrNotHeld, l.key)
	}
	// WaitCohort: pass the lock to the next request in this process's
	// line while more than half its validity is left, instead of
	// releasing it on every master.
	if l.cohort != nil && l.r.opts.Clock().Before(l.cohort.half) && l.head.pass(l.cohort) {
		l.r.handoffs.Add(1)
		return nil
	}
	defer l.head.leave()
	// WaitRelay: swap our token for the next request's on the masters.
	if l.relayOn() {
		next, err := l.r.relay(ctx, l)
		if next == nil {
			return err
		}
		if l.head.pass(next) {
			l.r.handoffs.Add(1)
			return nil
		}
		l.token, l.chain, l.ends = next.token, next.chain, next.ends // the waiter left meanwhile: give back its lock
	}
	// Done once a majority has released: a master that has not answered
	// (cut off, say) gets its release when it can, or the lease ends.
	q := Quorum(len(l.r.nodes))
	released := func(yes, _ int) bool { return yes >= q }
	v, errs, _ := l.r.round(ctx, nil, l.ends, false, released, l.releaser())
	if v.yes() >= q {
		return nil
	}
	err := fmt.Errorf("%w: redlock: %s released on %d of %d masters (quorum %d)",
		ErrNotHeld, l.key, v.yes(), len(l.r.nodes), q)
	if len(errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
	}
	return err
}

// spread draws each pause of the backoff it wraps at random in
// [d/2, 3d/2), so that clients that failed together do not retry together.
type spread struct{ b Backoff }

func (j spread) NextBackoff() time.Duration {
	d := j.b.NextBackoff()
	if d <= 0 {
		return d
	}
	return d/2 + rand.N(d)
}
