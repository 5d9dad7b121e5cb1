// Package contract is what the lab's app promises its clients beyond the
// shape of its JSON: the reasons a 409 or 503 gives (may the request have
// changed anything?), and the critical sections an instance reports at
// GET /sections, with the Recorder that keeps them. The app records with
// it; the benchmark and its checker read it. It imports nothing of the lab.
package contract

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Reasons the app gives in the "reason" field of a 409 or 503 body.
const (
	ReasonSoldOut     = "sold_out"     // 409: nothing left to sell
	ReasonStaleToken  = "stale_token"  // 409: a newer fencing token has written
	ReasonLockTimeout = "lock_timeout" // 503: the lock was not had in time
	ReasonLockBusy    = "lock_busy"    // 503: try=0 found the lock held: one attempt, no wait
	ReasonUnavailable = "unavailable"  // 503: Redis failed; the write may have happened
	// 503: Redis failed while the lock was being taken: nothing was written.
	ReasonLockUnavailable = "lock_unavailable"
	// 503: the server the lock (or its store) needs is not running for
	// this instance (ZooKeeper, etcd, MariaDB, Redlock's masters); the
	// error names it. Nothing was written.
	ReasonServerMissing = "server_missing"
	// 503: db-optimistic lost every compare-and-set to other writers
	// within its wait bound. Nothing was written.
	ReasonContended = "contended"
	// 409 on POST /race: another race is running on the stack (one at a
	// time, so that no race shares the stack with another).
	ReasonRaceRunning = "race_running"
	// 503 on POST /race: the stack cannot race (the instances' ladder
	// could not be read through the load balancer).
	ReasonNoRace = "race_unavailable"
	// 403: a browser sent the request from another site (Origin or
	// Sec-Fetch-Site says so). Nothing was done.
	ReasonCrossSite = "cross_site"
)

// HeaderLockWait is the header of an answer from inside a lock: how long
// the request waited for the lock, in milliseconds ("12.345").
const HeaderLockWait = "X-Lock-Wait"

// Section is one critical section an instance held: from the moment Obtain
// returned to the moment the release was sent. Both ends err on the short
// side: the lock was granted before Acquired and let go after Released, so
// two sections of a sound lock never overlap, even across instances (they
// share the host's clock).
type Section struct {
	Instance string `json:"instance"`
	Lock     string `json:"lock"` // the rung
	Key      string `json:"key"`
	Token    int64  `json:"token,omitempty"` // the fencing token, if the lock has one
	Acquired int64  `json:"acquired"`        // Unix nanoseconds
	Released int64  `json:"released"`        // Unix nanoseconds
	// Wrote says the business wrote: a fenced write refused as stale, a
	// sold-out read or an error did not, and those cannot do harm.
	Wrote bool `json:"wrote"`
}

// Recorder keeps an instance's latest sections in a ring of fixed size:
// recording costs a mutex and no allocation on the hot path, and no Redis
// round trip at all.
type Recorder struct {
	mu      sync.Mutex
	ring    []Section
	next    int   // where the next one goes
	n       int   // how many the ring holds
	evicted int64 // Acquired of the newest section overwritten (0: none)
	started int64 // when recording began: nothing older is known
	holding map[uint64]Section
	nextID  uint64
}

// NewRecorder keeps up to size sections (at least 1).
func NewRecorder(size int) *Recorder {
	return &Recorder{ring: make([]Section, max(size, 1)), started: time.Now().UnixNano(), holding: map[uint64]Section{}}
}

// Hold notes a section begun and not yet over (Released 0), until the
// returned func records it as over, with its final fields.
func (r *Recorder) Hold(s Section) (done func(Section)) {
	r.mu.Lock()
	id := r.nextID
	r.nextID++
	r.holding[id] = s
	r.mu.Unlock()
	return func(s Section) {
		r.mu.Lock()
		delete(r.holding, id)
		r.mu.Unlock()
		r.Add(s)
	}
}

// Holding returns the sections begun and not over yet, oldest first.
func (r *Recorder) Holding() []Section {
	r.mu.Lock()
	defer r.mu.Unlock()
	secs := make([]Section, 0, len(r.holding))
	for _, s := range r.holding {
		secs = append(secs, s)
	}
	slices.SortFunc(secs, func(a, b Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	return secs
}

// Add records s, overwriting the oldest when full.
func (r *Recorder) Add(s Section) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == len(r.ring) {
		r.evicted = max(r.evicted, r.ring[r.next].Acquired)
	} else {
		r.n++
	}
	r.ring[r.next] = s
	r.next = (r.next + 1) % len(r.ring)
}

// Since returns the sections acquired at or after since (Unix ns), oldest
// first, and whether that is all of them: false when the ring overwrote
// some, or since is before the recorder began (a restarted instance has
// forgotten what it held before).
func (r *Recorder) Since(since int64) (secs []Section, complete bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := (r.next - r.n + len(r.ring)) % len(r.ring)
	for i := range r.n {
		s := r.ring[(start+i)%len(r.ring)]
		if s.Acquired >= since {
			secs = append(secs, s)
		}
	}
	return secs, r.evicted < since && since >= r.started
}
