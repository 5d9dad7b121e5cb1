package speed

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
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
type CohortCarry struct{ c *lock.Cohort }

var _ lock.Locker = (*CohortCarry)(nil)

// DefaultCarryBound is how many sections one global acquisition of a
// CohortCarry may run by default: its sections cost no round trip of
// their own, so it runs more of them than Cohort in the same time.
const DefaultCarryBound = 64

// NewCohortCarry returns cohort's lock on rdb, carrying values and
// committing writes in groups: bound sections at most per global
// acquisition (0: DefaultCarryBound).
func NewCohortCarry(rdb redis.Cmdable, o lock.Options, bound int) *CohortCarry {
	if bound <= 0 {
		bound = DefaultCarryBound
	}
	return &CohortCarry{c: NewCohort(rdb, o, bound)}
}

// Counts are cohort's.
func (cc *CohortCarry) Counts() lock.Counts { return cc.c.Counts() }

// Obtain is cohort's; the Lock it returns is Tokened and a Carrier.
func (cc *CohortCarry) Obtain(ctx context.Context, key string, call lock.Call) (lock.Lock, error) {
	l, err := cc.c.Obtain(ctx, key, call)
	if err != nil {
		return nil, err
	}
	s := l.(*lock.CohortSection)
	return &carriedLock{s: s, p: s.Line().(*cohortPipe)}, nil
}

// ErrSpoiled is a write that did not land under a CohortCarry, seen by
// the sections behind it: what they were carried is not what Redis holds.
var ErrSpoiled = errors.New("lock: a write queued before this section's did not land")

// carriedLock is one section of a CohortCarry.
type carriedLock struct {
	s        *lock.CohortSection
	p        *cohortPipe
	released bool // under p.mu
}

var (
	_ lock.Tokened = (*carriedLock)(nil)
	_ lock.Carrier = (*carriedLock)(nil)
)

func (cl *carriedLock) Token() int64 { return cl.s.Token() }

// Release passes the lock on, or gives it back to Redis once the writes
// queued under it have landed.
func (cl *carriedLock) Release(ctx context.Context) error {
	cl.p.mu.Lock()
	cl.released = true
	cl.p.mu.Unlock()
	return cl.s.Release(ctx)
}

// ours locks the pipe when this section may still carry: not released,
// its lease neither lost nor replaced (Current, asked first: the Cohort's
// mutex comes before the pipe's), no write of the cohort failed. The
// caller unlocks it when ours says true.
func (cl *carriedLock) ours() bool {
	if !cl.s.Current() {
		return false
	}
	cl.p.mu.Lock()
	if cl.released || cl.p.spoiled {
		cl.p.mu.Unlock()
		return false
	}
	return true
}

func (cl *carriedLock) Carried(key string) (int64, bool) {
	if !cl.ours() {
		return 0, false
	}
	defer cl.p.mu.Unlock()
	v, ok := cl.p.carry[key]
	return v, ok
}

func (cl *carriedLock) Carry(key string, v int64) {
	if !cl.ours() {
		return
	}
	defer cl.p.mu.Unlock()
	if cl.p.carry == nil {
		cl.p.carry = map[string]int64{}
	}
	cl.p.carry[key] = v
}

func (cl *carriedLock) Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) func() error {
	cl.p.mu.Lock()
	released := cl.released
	cl.p.mu.Unlock()
	if released {
		return func() error { return lock.ErrNotHeld }
	}
	return cl.p.enqueue(context.Background(), rdb, q, sendBehind).wait
}

func (cl *carriedLock) Settle() error {
	p := cl.p
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	if last == nil {
		return nil
	}
	<-last.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spoiled {
		return ErrSpoiled
	}
	return nil
}
