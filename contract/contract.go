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

// Reasons the app gives in the "reason" field of a 403, 404, 409, 421 or
// 503 body.
const (
	ReasonSoldOut     = "sold_out"     // 409: nothing left to sell
	ReasonStaleToken  = "stale_token"  // 409: a newer fencing token has written
	ReasonLockTimeout = "lock_timeout" // 503: the lock was not had in time
	ReasonLockBusy    = "lock_busy"    // 503: try=0 found the lock held: one attempt, no wait
	ReasonUnavailable = "unavailable"  // 503: Redis failed; the write may have happened
	// 503: Redis failed while the lock was being taken, or while the
	// item was looked up before it: nothing was written.
	ReasonLockUnavailable = "lock_unavailable"
	// 503: the server the lock (or its store) needs is not running for
	// this instance (ZooKeeper, etcd, MariaDB, Redlock's masters); the
	// error names it. Nothing was written.
	ReasonServerMissing = "server_missing"
	// 503: db-optimistic lost every compare-and-set to other writers
	// within its wait bound. Nothing was written.
	ReasonContended = "contended"
	// 409 on POST /reset, POST /guard and POST /race: another run (a
	// race, the bench, the demo, a scenario) holds the stack's run guard
	// (package guard); the body names it ("owner") and since when
	// ("since"). Nothing was done.
	ReasonRunInProgress = "run_in_progress"
	// 409 on PUT /guard: the run's guard expired and another run took
	// it (named as above). Nothing was done.
	ReasonGuardLost = "guard_lost"
	// 409 on POST /reset: the items it would make are more than may
	// exist at once (the body names the bound). Nothing was made.
	ReasonTooManyItems = "too_many_items"
	// 503 on POST /race: the stack cannot race (the instances' ladder
	// could not be read through the load balancer).
	ReasonNoRace = "race_unavailable"
	// 400 on POST /race?scenario=: the matrix does not run the pair
	// (the error says the matrix's reason).
	ReasonNotInMatrix = "not_in_matrix"
	// 400 on POST /race?scenario=: the running stack cannot stage the
	// scenario (the error says what it needs: another number of
	// instances, a clock skewed at start, AOF masters...).
	ReasonCannotStage = "cannot_stage"
	// 403: a browser sent the request from another site (Origin or
	// Sec-Fetch-Site says so). Nothing was done.
	ReasonCrossSite = "cross_site"
	// 421: the request's Host is not a name the lab serves: a name of
	// someone else's that resolves here (DNS rebinding), or one the
	// instance was not told of (the app's -hosts). Nothing was done.
	ReasonHostNotAllowed = "host_not_allowed"
	// 404 on /sale, /testLock and /stock: sku= names an item that
	// POST /reset never made. Nothing was done: no lock taken, nothing
	// written, nothing kept.
	ReasonNoSuchItem = "no_such_item"
)

// HeaderLockWait is the header of an answer from inside a lock: how long
// the request waited for the lock, in milliseconds ("12.345").
const HeaderLockWait = "X-Lock-Wait"

// HeaderFaultKey is the header of a request that arms a fault (work=,
// fault=, pause=) on an instance given a fault key (the app's
// -fault-key): its value must be the key. Without it the fault
// parameters are a 400, as on an instance with no faults at all.
const HeaderFaultKey = "X-Fault-Key"

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
	// Refused says a fence refused the business's read or write: a newer
	// token had been there (the timeline marks it).
	Refused bool `json:"refused,omitempty"`
	// Interrupted says the instance died inside the section (a crash):
	// its beginning was written down and its end never was. Released is
	// then when the instance was started again, the latest the crash can
	// have come, and Wrote is false (not known). Its lock may outlive it:
	// a lock without a lease stays held for good.
	Interrupted bool `json:"interrupted,omitempty"`
}

// LockState is GET /lock's answer: the lock key of an item's stock (or,
// with endpoint=testLock, of its num) as the main Redis holds it now. A
// race that ends in DEADLOCK reads it to draw the stuck lock: a key a
// crashed holder left, with its TTL, or none ("no TTL": held for good).
type LockState struct {
	Key string `json:"key"`
	// Held says the key exists: some holder's lock is there.
	Held bool `json:"held"`
	// TTLMs is what is left of its lease, in milliseconds; -1: it has
	// none (setnx's lock, setnx-expire's before its EXPIRE), and only a
	// DEL frees it. 0 when not held.
	TTLMs int64 `json:"ttl_ms"`
}

// Recorder keeps an instance's latest sections, a fixed number of them:
// recording costs a mutex (and an allocation once every chunk of 1024),
// and no Redis round trip at all; opened on a file (OpenRecorder), two
// appends to it more, and its sections outlive a crash. The sections sit in chunks that are
// only ever appended to, so a reader holds the mutex only to note where
// they are, and filters, sorts and copies them outside it: the requests
// that record never wait behind a read.
type Recorder struct {
	mu      sync.Mutex
	size    int         // the most sections kept
	chunk   int         // the capacity of a chunk
	chunks  [][]Section // oldest first; only the last one has room
	head    int         // the sections of chunks[0] already forgotten
	n       int         // the sections kept
	evicted int64       // Acquired of the newest section forgotten (0: none)
	started int64       // when recording began: nothing older is known
	holding map[uint64]Section
	nextID  uint64
	j       *journal // nil: memory only (OpenRecorder)
}

// NewRecorder keeps up to size sections (at least 1).
func NewRecorder(size int) *Recorder {
	size = max(size, 1)
	return &Recorder{size: size, chunk: min(size, 1024), started: time.Now().UnixNano(), holding: map[uint64]Section{}}
}

// Hold notes a section begun and not yet over (Released 0), until the
// returned func records it as over, with its final fields.
func (r *Recorder) Hold(s Section) (done func(Section)) {
	r.mu.Lock()
	id := r.nextID
	r.nextID++
	r.holding[id] = s
	r.mu.Unlock()
	if r.j != nil {
		r.j.section(id+1, 0, s)
	}
	return func(s Section) {
		if r.j != nil {
			r.j.section(0, id+1, s)
		}
		r.mu.Lock()
		delete(r.holding, id)
		r.mu.Unlock()
		r.Add(s)
	}
}

// Holding returns the sections begun and not over yet, oldest first.
func (r *Recorder) Holding() []Section {
	r.mu.Lock()
	secs := make([]Section, 0, len(r.holding))
	for _, s := range r.holding {
		secs = append(secs, s)
	}
	r.mu.Unlock()
	slices.SortFunc(secs, func(a, b Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	return secs
}

// Add records s, forgetting the oldest when full.
func (r *Recorder) Add(s Section) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k := len(r.chunks); k == 0 || len(r.chunks[k-1]) == r.chunk {
		r.chunks = append(r.chunks, make([]Section, 0, r.chunk))
	}
	last := &r.chunks[len(r.chunks)-1]
	*last = append(*last, s) // written once, below every reader's length
	if r.n++; r.n > r.size {
		r.evicted = max(r.evicted, r.chunks[0][r.head].Acquired)
		r.n--
		if r.head++; r.head == r.chunk {
			r.chunks[0] = nil
			r.chunks, r.head = r.chunks[1:], 0
		}
	}
}

// Page is part of what a Recorder keeps (see Since).
type Page struct {
	// Sections are in the order they were acquired.
	Sections []Section
	// Complete says the recorder forgot none acquired at or after the
	// since asked: false when it forgot some, or since is before it began
	// (a restarted instance has forgotten what it held before).
	Complete bool
	// Next, when not 0, says the limit left sections out, each acquired
	// at or after Next, and none of the page's was: ask again from Next.
	Next int64
}

// Since returns the sections acquired at or after since (Unix ns), the
// earliest acquired first, at most limit of them (0: all).
func (r *Recorder) Since(since int64, limit int) Page {
	r.mu.Lock()
	chunks := make([][]Section, len(r.chunks))
	for i, c := range r.chunks {
		chunks[i] = c[:len(c):len(c)] // what is there now: never written again
	}
	if len(chunks) > 0 {
		chunks[0] = chunks[0][r.head:]
	}
	p := Page{Complete: r.evicted < since && since >= r.started}
	r.mu.Unlock()

	var secs []Section
	for _, c := range chunks {
		for _, s := range c {
			if s.Acquired >= since {
				secs = append(secs, s)
			}
		}
	}
	// Recorded as they were released, they are nearly in order.
	slices.SortStableFunc(secs, func(a, b Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
	if limit <= 0 || len(secs) <= limit {
		p.Sections = secs
		return p
	}
	// The page ends before the first section left out, and before any
	// acquired in the same nanosecond: asked from Next, the next page has
	// them all, and nothing of this one. (Should more than limit share a
	// nanosecond, they go out together.)
	cut, next := limit, secs[limit].Acquired
	for cut > 0 && secs[cut-1].Acquired == next {
		cut--
	}
	if cut == 0 {
		for cut = limit; cut < len(secs) && secs[cut].Acquired == next; cut++ {
		}
		next = 0
		if cut < len(secs) {
			next = secs[cut].Acquired
		}
	}
	p.Sections, p.Next = secs[:cut:cut], next
	return p
}
