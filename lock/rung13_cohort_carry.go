package lock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// CohortCarry is cohort's lock (rung 13) that carries the data with it.
// In a cohort, every section still reads the value from Redis, although
// the section before it, which wrote that value a moment ago, ran in the
// same process under the same lease: one round trip of the two each
// section pays is spent learning what the process already knows.
//
// Here the lock remembers what each section wrote (Carry) and hands it to
// the next section of its cohort (Carried), which computes from it
// without a read: a passed section costs one round trip, its write.
// A cohort that starts in Redis, after another instance has held the lock,
// carries nothing and reads.
//
// The safety argument is fair's and cohort's (the lease, the fencing
// token per section, the lost lease never passed on), plus one step for
// the value. A carried value is the one the cohort's previous section
// wrote and Redis accepted under this lease; while the cohort holds the
// lease nobody else may write, so it is still the value in Redis. That
// "nobody else" is an assumption about every other writer, so the write
// does not take it on trust: it is a compare-and-set (package inventory:
// written only if the value is still the one carried, and the token still
// the highest seen), and a value changed behind the lock's back costs a
// read and a second try, never a lost update. The one thing the check
// cannot cover is a section that writes nothing: a sale answered "sold
// out" from a carried zero, while a writer outside the lock had raised
// the stock.
//
// What it costs: cohort's fairness, and the release no longer rides in
// the pipeline of the last write (a refused compare-and-set must be able
// to read and write again under the lock): one round trip more per
// cohort, not per section.
type CohortCarry struct{ c *Cohort }

var _ Locker = (*CohortCarry)(nil)

// NewCohortCarry returns cohort's lock on rdb, carrying values: bound
// sections at most per global acquisition (0: DefaultCohortBound).
func NewCohortCarry(rdb redis.Cmdable, o Options, bound int) *CohortCarry {
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
	return &carriedLock{l: l.(*cohortLock)}, nil
}

// Carrier is a held lock that carries values from one section to the
// next: what the last section wrote, so that the next need not read it.
type Carrier interface {
	// Carried is key's value as the last section under this lock's lease
	// wrote it, or false when the section must read it.
	Carried(key string) (int64, bool)
	// Carry records v as key's value, written by this section and
	// accepted. It must come before Release.
	Carry(key string, v int64)
}

// carriedLock is one section of a CohortCarry. It is not a
// PipelineReleaser: see CohortCarry.
type carriedLock struct {
	l        *cohortLock
	released bool // under l.c.mu
}

var (
	_ Tokened = (*carriedLock)(nil)
	_ Carrier = (*carriedLock)(nil)
)

func (cl *carriedLock) Token() int64 { return cl.l.token }

func (cl *carriedLock) Release(ctx context.Context) error {
	cl.l.c.mu.Lock()
	cl.released = true
	cl.l.c.mu.Unlock()
	return cl.l.Release(ctx)
}

// ours says whether this section still runs under the line's lock: not
// released, and the lease neither lost nor replaced. The caller holds c.mu.
func (cl *carriedLock) ours() bool {
	h := cl.l.ln.held
	return !cl.released && h != nil && h.fence == cl.l.token>>cohortSeqBits && !h.lost.Load()
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
