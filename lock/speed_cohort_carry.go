package lock

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// CohortCarry is cohort's lock (rung 13) that carries the data with it.
// In a cohort every section still reads the value from Redis, although
// the section before it, which wrote that value a moment ago, ran in the
// same process under the same lease: a round trip per section, in
// series, even with the write before it riding along. The lock cannot go
// faster than that.
//
// Here the lock remembers the value each section left (Carry: what it
// read, or wrote) and hands it to the next section of its cohort
// (Carried), which computes from it without a read. Then nothing waits
// for Redis between two sections: a section queues its write behind
// every write queued before it under the lock (Commit), passes the lock
// on at once, and waits for its own write's answer before it answers. The
// line's writes go to Redis in the order they were queued, each pipeline
// carrying every write that queued while the one before it was in flight
// (a group commit): the sections follow each other at the speed of
// memory, and the round trips are shared. A cohort that starts in Redis,
// after another instance has held the lock, carries nothing and reads.
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
// until the writes before it have landed (Settle). The release to Redis
// goes down the line's pipe behind the cohort's writes, so the next
// instance's read sees them.
//
// What it costs: cohort's fairness; the assumption that every writer
// takes the lock (a write from outside fails the writes queued behind
// it, and their requests answer an error); and a critical section that
// ends before its write lands: the instances' recorded sections end at
// the pass, the write lands later, in order.
type CohortCarry struct{ c *Cohort }

var _ Locker = (*CohortCarry)(nil)

// DefaultCarryBound is how many sections one global acquisition of a
// CohortCarry may run by default: its sections cost no round trip of
// their own, so it runs more of them than Cohort in the same time.
const DefaultCarryBound = 64

// NewCohortCarry returns cohort's lock on rdb, carrying values and
// committing writes in groups: bound sections at most per global
// acquisition (0: DefaultCarryBound).
func NewCohortCarry(rdb redis.Cmdable, o Options, bound int) *CohortCarry {
	if bound <= 0 {
		bound = DefaultCarryBound
	}
	return &CohortCarry{c: NewCohort(rdb, o, bound)}
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
	return !cl.released && h != nil && h.fence == cl.l.token>>cohortSeqBits && !h.lost.Load() && !ln.pipe.spoiled
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
	cl.l.c.mu.Lock()
	released := cl.released
	cl.l.c.mu.Unlock()
	if released {
		return func() error { return ErrNotHeld }
	}
	return cl.l.c.enqueue(context.Background(), cl.l.ln, rdb, q, sendBehind).wait
}

func (cl *carriedLock) Settle() error {
	c, ln := cl.l.c, cl.l.ln
	c.mu.Lock()
	last := ln.pipe.last
	c.mu.Unlock()
	if last == nil {
		return nil
	}
	<-last.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if ln.pipe.spoiled {
		return ErrSpoiled
	}
	return nil
}
