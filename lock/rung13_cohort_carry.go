package lock

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// CohortCarry is cohort's lock (rung 13) that carries the data with it
// and lets go of it before its write has landed. In a cohort every
// section still reads the value from Redis, although the section before
// it, which wrote that value a moment ago, ran in the same process under
// the same lease; and it keeps the lock until its write is answered. Two
// round trips per section, in series: the lock cannot go faster than
// them.
//
// Here the lock remembers the value each section left (Carry: what it
// read, or wrote) and hands it to the next section of its cohort
// (Carried), which computes from it without a read. And a section does not wait for its write: it queues
// the write behind every write queued before it under the lock (Commit)
// and passes the lock on at once, then waits for its own write's answer
// before it answers. The line's writes go to Redis in the order they were
// queued, one pipeline at a time, each pipeline carrying every write that
// queued while the one before it was in flight (a group commit): the
// sections follow each other at the speed of memory, and the round trips
// are shared. A cohort that starts in Redis, after another instance has
// held the lock, carries nothing and reads.
//
// Why it is still safe: each write is a compare-and-set (package
// inventory: written only if the value is still the one the section
// computed from, and its fencing token still the highest seen), and each
// section computed from the value the write before it sets. So a write
// lands only if every write before it in the cohort did; one that fails
// (a lost lease, a value changed behind the lock's back) fails every
// write queued after it, which then answer an error and change nothing,
// and the cohort ends there: no further pass, the lock back to Redis, the
// next section reads. A section answers success only once its own write
// has landed; a sale answered "sold out" from a carried zero first waits
// until the writes before it have landed (Settle). The lock goes back to
// Redis only after the cohort's writes have landed, so the next
// instance's read sees them.
//
// What it costs: cohort's fairness; the assumption that every writer
// takes the lock (a write from outside fails the writes queued behind
// it, and their requests answer an error); and a critical section that
// ends before its write lands: the instances' recorded sections end at
// the pass, the write lands later, in order.
type CohortCarry struct{ c *Cohort }

var _ Locker = (*CohortCarry)(nil)

// NewCohortCarry returns cohort's lock on rdb, carrying values and
// committing writes in groups: bound sections at most per global
// acquisition (0: DefaultCohortBound).
func NewCohortCarry(rdb redis.Cmdable, o Options, bound int) *CohortCarry {
	cc := &CohortCarry{c: NewCohort(rdb, o, bound)}
	cc.c.beforeRelease = cc.landed
	return cc
}

// Counts are cohort's.
func (cc *CohortCarry) Counts() Counts { return cc.c.Counts() }

// Obtain is cohort's; the Lock it returns is Tokened and a Carrier.
func (cc *CohortCarry) Obtain(ctx context.Context, key string, call Call) (Lock, error) {
	l, err := cc.c.Obtain(ctx, key, call)
	if err != nil {
		return nil, err
	}
	return &carriedLock{cc: cc, l: l.(*cohortLock)}, nil
}

// Carrier is a held lock that carries values from one section to the
// next, and commits their writes in order.
type Carrier interface {
	// Carried is key's value as the last section under this lock's lease
	// computed it, or false when the section must read it.
	Carried(key string) (int64, bool)
	// Carry records v as key's value as this section leaves it: read
	// from Redis, or computed and queued with Commit. It must come before
	// Release.
	Carry(key string, v int64)
	// Commit queues a write behind every write queued before it under the
	// lock, and returns at once: the section may release before it lands.
	// q adds the write's commands to a pipeline on rdb and returns how to
	// read their outcome; wait blocks until that outcome is known.
	Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) (wait func() error)
	// Settle waits until every write queued under the lock so far has
	// landed. It returns an error when one did not: what was carried is
	// not what Redis holds.
	Settle() error
}

// ErrSpoiled is a write that did not land under a CohortCarry, seen by
// the sections behind it: what they were carried is not what Redis holds.
var ErrSpoiled = errors.New("lock: a write queued before this section's did not land")

// writeGroup is a line's queue of writes (CohortCarry).
type writeGroup struct {
	queued   []*pendingWrite
	flushing bool          // a goroutine is sending them
	last     *pendingWrite // the last queued in this cohort, nil before any
	spoiled  bool          // one did not land: the cohort carries and passes no more
}

type pendingWrite struct {
	rdb   redis.Cmdable
	queue func(redis.Pipeliner) func() error
	done  chan struct{} // closed once err is set
	err   error
}

// carriedLock is one section of a CohortCarry.
type carriedLock struct {
	cc       *CohortCarry
	l        *cohortLock
	released bool // under c.mu
}

var (
	_ Tokened = (*carriedLock)(nil)
	_ Carrier = (*carriedLock)(nil)
)

func (cl *carriedLock) Token() int64 { return cl.l.token }

// Release passes the lock on, or gives it back to Redis once the writes
// queued under it have landed.
func (cl *carriedLock) Release(ctx context.Context) error {
	cl.l.c.mu.Lock()
	cl.released = true
	cl.l.c.mu.Unlock()
	return cl.l.Release(ctx)
}

// ours says whether this section may still carry: not released, its
// lease neither lost nor replaced, no write of the cohort failed. The
// caller holds c.mu.
func (cl *carriedLock) ours() bool {
	ln := cl.l.ln
	h := ln.held
	return !cl.released && h != nil && h.fence == cl.l.token>>cohortSeqBits && !h.lost.Load() && !ln.group.spoiled
}

func (cl *carriedLock) Carried(key string) (int64, bool) {
	cl.l.c.mu.Lock()
	defer cl.l.c.mu.Unlock()
	if !cl.ours() {
		return 0, false
	}
	v, ok := cl.l.ln.carry[key]
	return v, ok
}

func (cl *carriedLock) Carry(key string, v int64) {
	cl.l.c.mu.Lock()
	defer cl.l.c.mu.Unlock()
	if !cl.ours() {
		return
	}
	if cl.l.ln.carry == nil {
		cl.l.ln.carry = map[string]int64{}
	}
	cl.l.ln.carry[key] = v
}

func (cl *carriedLock) Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) func() error {
	c, ln := cl.l.c, cl.l.ln
	w := &pendingWrite{rdb: rdb, queue: q, done: make(chan struct{})}
	c.mu.Lock()
	if cl.released {
		c.mu.Unlock()
		return func() error { return ErrNotHeld }
	}
	g := &ln.group
	g.queued = append(g.queued, w)
	g.last = w
	start := !g.flushing
	g.flushing = true
	c.mu.Unlock()
	if start {
		go cl.cc.flush(ln)
	}
	return func() error { <-w.done; return w.err }
}

func (cl *carriedLock) Settle() error {
	c, ln := cl.l.c, cl.l.ln
	c.mu.Lock()
	last := ln.group.last
	c.mu.Unlock()
	if last == nil {
		return nil
	}
	<-last.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if ln.group.spoiled {
		return ErrSpoiled
	}
	return nil
}

// landed waits until the writes queued under ln's lock have landed:
// before the lock goes back to Redis.
func (cc *CohortCarry) landed(ln *cohortLine) {
	cc.c.mu.Lock()
	last := ln.group.last
	cc.c.mu.Unlock()
	if last != nil {
		<-last.done
	}
}

// flush sends ln's queued writes, one pipeline at a time, in order, until
// none is left. One runs per line at a time.
func (cc *CohortCarry) flush(ln *cohortLine) {
	c := cc.c
	for {
		c.mu.Lock()
		batch := ln.group.queued
		ln.group.queued = nil
		if len(batch) == 0 {
			ln.group.flushing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for len(batch) > 0 { // a pipeline per client, in order
			n := 1
			for n < len(batch) && batch[n].rdb == batch[0].rdb {
				n++
			}
			cc.send(ln, batch[:n])
			batch = batch[n:]
		}
	}
}

// send runs ws in one pipeline and tells each its outcome. A write that
// did not land spoils the cohort.
func (cc *CohortCarry) send(ln *cohortLine, ws []*pendingWrite) {
	ctx, cancel := context.WithTimeout(context.Background(), cc.c.fair.opts.TTL)
	defer cancel()
	checks := make([]func() error, len(ws))
	// Each command's error is read by its own check.
	_, _ = ws[0].rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range ws {
			checks[i] = w.queue(p)
		}
		return nil
	})
	failed := false
	for i, w := range ws {
		w.err = checks[i]()
		failed = failed || w.err != nil
	}
	if failed {
		cc.c.mu.Lock()
		ln.group.spoiled = true // Carried, Carry and the pass all check it
		cc.c.mu.Unlock()
	}
	for _, w := range ws {
		close(w.done)
	}
}
