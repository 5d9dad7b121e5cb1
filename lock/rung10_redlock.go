package lock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/workers"
)

// Redlock takes rung 6's lock (SET key token NX PX ttl, compare-and-delete
// release) on N independent masters at once, and holds it only with a
// majority of them, within the time the lease still has to run
// (docs/ladder.md, rung 10). The algorithm is one function, attempt.
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
// What it still shows (Kleppmann): it assumes bounded pauses, network
// delays and clock drift. A holder paused past its validity (GC, SIGSTOP)
// still believes it holds the lock while another client takes it: two
// holders. And if a majority of masters restart without persistence (AOF
// with fsync), they forget the lock and grant it again.
//
// How a process's requests wait for it is not the algorithm, but it is
// most of its cost: when many clients try at once, each wins some masters
// and none a majority (a split vote). The articles' loop (wait=fixed,
// every request contending) is here; the lab lines a process's requests
// up behind one contender and relays the lock down the line (package
// speed's RedlockLine, by Attempt and RedlockLock.Relay), every section
// still holding a lease of its own from a majority.
type Redlock struct {
	counts
	nodes       []redlockNode
	opts        Options
	nodeTimeout time.Duration
	drift       time.Duration
	pause       time.Duration
	notifier    Notifier
	workers     workers.Pool
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
	// on: notify.EnableKeyspaceEvents), wakes the head of each process's line
	// when the lock's key is deleted there: when the lock frees, the heads
	// of every process try at once, and the head in the releasing process
	// has no head start. Without it the heads poll every QueuePause.
	// (Options.Notifier listens to another Redis: Redlock ignores it.)
	Notifier Notifier
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
	o = o.WithDefaults()
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
// within validity, or the wait ends: every request contends on the
// masters, waiting between two attempts as the call says (the articles'
// way; WaitFixed by default). Lining a process's requests up (WaitQueue,
// WaitRelay, WaitCohort) is package speed's RedlockLine, in front of
// this. The Lock it returns is a *RedlockLock. On ErrNotObtained the
// error also tells how the last attempt went, with each failed master's
// error.
func (r *Redlock) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	w := r.opts.waiter(c, key)
	if r.opts.mode(c) == WaitQueue {
		w = r.HeadWaiter(key)
	}
	l, err := r.obtain(ctx, key, c, w)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Options are the Redlock's, defaults filled in.
func (r *Redlock) Options() Options { return r.opts }

// HeadWaiter is how the head of a process's line waits between two
// attempts: woken when RedlockOptions.Notifier hears the lock's key
// deleted on its master, or without it polling every QueuePause,
// jittered. Register it before the first attempt, so that no release
// after that attempt goes unheard.
func (r *Redlock) HeadWaiter(key string) Waiter {
	return r.opts.headWaiter(r.notifier, key, r.pause)
}

// obtain makes attempts with a token of its own until one wins, waiting
// by w between two, within the call's bound.
func (r *Redlock) obtain(ctx context.Context, key string, c Call, w Waiter) (*RedlockLock, error) {
	token, ttl := uuid.NewString(), c.TTL(r.opts.TTL)
	var (
		held *RedlockLock
		last error // why the last attempt lost
	)
	err := acquire(ctx, r.opts, c, w, func(ctx context.Context) (bool, error) {
		l, lost := r.Attempt(ctx, key, token, ttl)
		if lost == nil {
			held = l
			return true, nil
		}
		// An attempt cut short by the end of the wait says less than
		// the complete one before it: keep that.
		if last == nil || ctx.Err() == nil {
			last = lost
		}
		r.retries.Add(1)
		return false, nil
	})
	if err != nil {
		if errors.Is(err, ErrNotObtained) && last != nil {
			return nil, fmt.Errorf("%w; last attempt: %w", err, last)
		}
		return nil, err
	}
	return held, nil
}

// Attempt is one Redlock attempt at key for token: the algorithm of
// docs/ladder.md's rung 10 (redsync's lockContext). It returns the lock,
// held on a majority for its validity, or nil and why the attempt lost,
// having given back whatever it may have taken.
func (r *Redlock) Attempt(ctx context.Context, key, token string, ttl time.Duration) (*RedlockLock, error) {
	quorum := Quorum(len(r.nodes))
	// T1, before the first master: the lease runs from here on every
	// master, whenever its SET lands.
	t1 := r.opts.Clock()
	validity := func() time.Duration { return ttl - r.opts.Clock().Sub(t1) - r.drift }

	// SET key token NX PX ttl on every master at once, each call bounded
	// by the node timeout, so that a dead master cannot eat the lease.
	// Once a quorum said yes with validity left the attempt has won: a
	// master yet to answer (cut off, say) is not waited for. If it sets
	// our token after all, the release, which asks each master once its
	// SET has ended, removes it.
	set := r.onMasters(ctx, func(ctx context.Context, m redis.Cmdable) (bool, error) {
		return m.SetNX(ctx, key, token, ttl).Result()
	}, roundOpts{enough: func(yes int) bool { return yes >= quorum && validity() > 0 }})

	// T2: won with a quorum and validity = TTL - (T2 - T1) - drift left.
	left, held := validity(), set.votes.yes()
	if held >= quorum && left > 0 {
		return &RedlockLock{r: r, key: key, token: token, t1: t1, validity: left, until: t1.Add(ttl - r.drift), ends: set.ends}, nil
	}

	// Lost: give back what this attempt may have taken, even when ctx
	// has ended (a minority left behind would block everyone until it
	// expires). A master that said no holds nothing of ours.
	if ours := set.votes.maybeOurs(); ours != nil {
		r.onMasters(context.WithoutCancel(ctx), releaser(key, token), roundOpts{only: ours, after: set.ends})
	}
	lost := fmt.Errorf("redlock: %s held on %d of %d masters (quorum %d), validity %s",
		key, held, len(r.nodes), quorum, left)
	if len(set.errs) > 0 {
		lost = fmt.Errorf("%w: %w", lost, errors.Join(set.errs...))
	}
	return nil, lost
}

// RedlockLock is a lock a majority of the masters granted.
type RedlockLock struct {
	r        *Redlock
	key      string
	token    string
	t1       time.Time // when the attempt that won began: the lease runs from here
	validity time.Duration
	until    time.Time   // when validity ends
	ends     settled     // the round that set our token: a release on a master waits for it
	released atomic.Bool // a second Release must not touch a lock passed on
	chain    string      // relayed (Relay): the chain's first token; "" before any relay
	seq      int         // relayed: our token is the chain's seq-th relay
}

// Validity is how long the lock was still safe to rely on when Obtain
// returned: TTL - acquisition time - drift. Past it, another client may
// hold the lock.
func (l *RedlockLock) Validity() time.Duration { return l.validity }

// Key is the lock's key.
func (l *RedlockLock) Key() string { return l.key }

// T1 is when the attempt that won began: the lease runs from there.
func (l *RedlockLock) T1() time.Time { return l.t1 }

// Until is when the lock's validity ends, on the Redlock's clock.
func (l *RedlockLock) Until() time.Time { return l.until }

// Release deletes the lock on every master that still holds our token. It
// succeeds when a quorum of masters did; otherwise it returns ErrNotHeld,
// joined with each failed master's error. Keys left on masters that failed
// lapse with their TTL.
func (l *RedlockLock) Release(ctx context.Context) error {
	if l.released.Swap(true) {
		return fmt.Errorf("%w: redlock: %s already released", ErrNotHeld, l.key)
	}
	return l.r.release(ctx, l.key, l.releaser(), l.ends)
}

// release runs a release call on every master, on each once the round in
// after has ended there, and is done once a quorum has released: a master
// that has not answered (cut off, say) gets its release when it can, or
// the lease ends. Without a quorum it is ErrNotHeld, with each failed
// master's error.
func (r *Redlock) release(ctx context.Context, key string, call masterCall, after settled) error {
	quorum := Quorum(len(r.nodes))
	gone := r.onMasters(ctx, call, roundOpts{after: after, enough: func(yes int) bool { return yes >= quorum }})
	if gone.votes.yes() >= quorum {
		return nil
	}
	err := fmt.Errorf("%w: redlock: %s released on %d of %d masters (quorum %d)",
		ErrNotHeld, key, gone.votes.yes(), len(r.nodes), quorum)
	if len(gone.errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(gone.errs...))
	}
	return err
}

// releaser is rung 6's compare-and-delete release, reporting true when
// this master still held our token and deleted it.
func releaser(key, token string) masterCall {
	return func(ctx context.Context, m redis.Cmdable) (bool, error) {
		n, err := luaRelease.Run(ctx, m, []string{key}, token).Int64()
		return n == 1, err
	}
}

// spread draws each pause of the backoff it wraps at random in
// [d/2, 3d/2), so that clients that failed together do not retry together.
type spread struct{ b Backoff }

func (j spread) NextBackoff() time.Duration { return Jittered(j.b.NextBackoff()) }
