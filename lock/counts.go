package lock

import "sync/atomic"

// Counts are how a Locker's acquisitions have gone since it was made:
// what GET /metrics reports per lock beside the time spent waiting.
type Counts struct {
	// Retries are the tries that did not get the lock (it was held, or a
	// Redlock attempt won no majority): the price of polling.
	Retries uint64
	// Handoffs are the locks given to the next waiter without a release
	// and a new acquisition: fair's handoff in Redis, cohort's and
	// redlock's passes in memory, redlock's relays on the masters.
	Handoffs uint64
}

// Counter is a Locker that counts its retries and handoffs.
type Counter interface {
	Counts() Counts
}

// counts is the Counter a Locker embeds.
type counts struct{ retries, handoffs atomic.Uint64 }

func (c *counts) Counts() Counts {
	return Counts{Retries: c.retries.Load(), Handoffs: c.handoffs.Load()}
}
