package lock

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Info describes one rung of the ladder, for /strategies and reports.
type Info struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Flaw    string `json:"flaw"`
	// Waits are the wait modes (wait=) the rung honours, its default
	// first; none for a rung that never waits on a busy lock, or (fair)
	// waits only its own way.
	Waits []WaitMode `json:"waits,omitempty"`
	// Try says the rung takes Call.Try (it can wait for a busy lock);
	// Lease says it takes Call.Lease (its lock has a lease to set).
	Try   bool `json:"try,omitempty"`
	Lease bool `json:"lease,omitempty"`
	// Atomic marks the ceiling: no lock at all, because the whole
	// operation is one Lua script. Its Locker is nil.
	Atomic bool `json:"atomic,omitempty"`
}

// Ladder holds one Locker per rung, shared by every request of a process.
type Ladder struct {
	rungs   []Info
	lockers map[string]Locker
}

// ErrNoMasters is what redlock answers when the process was given no
// independent masters.
var ErrNoMasters = errors.New("lock: redlock needs independent masters (start the app with -masters a,b,c,d,e)")

// NewLadder builds every rung over one Redis client; redlock runs over the
// independent masters instead, as ro says.
func NewLadder(rdb redis.Cmdable, masters []redis.Cmdable, o Options, ro RedlockOptions) *Ladder {
	l := &Ladder{lockers: make(map[string]Locker)}
	var redlock Locker = unavailable{ErrNoMasters}
	if len(masters) > 0 {
		redlock = NewRedlock(masters, o, ro)
	}
	for _, r := range []struct {
		Info
		Locker
	}{
		{Info{Name: "none",
			Summary: "no lock: GET, check, SET straight away",
			Flaw:    "lost updates under any concurrency"}, None{}},
		{Info{Name: "local", Try: true,
			Summary: "an in-process lock per key, reentrant like Java's synchronized",
			Flaw:    "excludes only within one process: oversells across instances"}, NewLocal(o)},
		{Info{Name: "setnx", Waits: pollModes, Try: true,
			Summary: "SETNX key 1, business, DEL key",
			Flaw:    "a holder that dies never releases: every later request waits forever"}, NewSetNX(rdb, o)},
		{Info{Name: "setnx-expire", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX, then a separate EXPIRE",
			Flaw:    "a crash between the two commands leaves a lock with no TTL"}, NewSetNXExpire(rdb, o)},
		{Info{Name: "setnx-px", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key 1 NX PX ttl (sent as EX for a whole number of seconds), then a plain DEL",
			Flaw:    "business longer than the TTL: the lock lapses and A's DEL frees B's lock"}, NewSetNXPX(rdb, o)},
		{Info{Name: "check-del", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release = GET, compare, DEL as two commands",
			Flaw:    "the lock can pass to B between A's GET and DEL: A deletes B's lock"}, NewCheckDel(rdb, o)},
		{Info{Name: "lua", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release with a Lua compare-and-delete",
			Flaw:    "the lease still lapses when the business outlives the TTL"}, NewLua(rdb, o)},
		{Info{Name: "del-setnx", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; a waiter that finds it expired by its clock DELs it, then SETNX",
			Flaw:    "two waiters that see the same expired lock both DEL and both SETNX: two holders"}, NewDelSetNX(rdb, o)},
		{Info{Name: "getset", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; take an expired lock with GETSET; DEL only before own expiry",
			Flaw:    "trusts synchronised clocks; a slow holder still loses the lock"}, NewGetSet(rdb, o)},
		{Info{Name: "reentrant", Waits: pollModes, Try: true, Lease: true,
			Summary: "hash {owner: count} in Lua scripts, a watchdog renewing every TTL/3",
			Flaw:    "a process paused longer than the TTL loses the lease, watchdog and all"}, NewReentrant(rdb, o)},
		{Info{Name: "redlock", Try: true, Lease: true, Waits: []WaitMode{WaitQueue, WaitFixed, WaitBackoff, WaitNotify},
			Summary: "the lock on 5 independent masters; a majority within validity wins; a process's requests queue in memory behind one contender (wait=queue; wait=fixed: every request contends and splits the vote)",
			Flaw:    "assumes bounded pauses and clocks: a pause past validity yields two holders"}, redlock},
		{Info{Name: "fenced", Waits: pollModes, Try: true, Lease: true,
			Summary: "a lease plus a fencing token; the stock refuses a token lower than the highest seen",
			Flaw:    "none under these scenarios: a stale holder's read and write are refused; but waiters poll, and who wins is luck"}, NewFenced(rdb, o)},
		{Info{Name: "fair", Try: true, Lease: true,
			Summary: "fenced lease plus a FIFO queue in Redis: the release hands the lock to the next live waiter and wakes exactly it; watchdog",
			Flaw:    "none under these scenarios; the lock is still one Redis key, and every sale still pays the lock's round trips"}, NewFair(rdb, o)},
		{Info{Name: "atomic",
			Summary: "no lock: one Lua script checks and decrements (or increments)",
			Flaw:    "none, but only when the whole operation fits in one script",
			Atomic:  true}, nil},
	} {
		l.rungs = append(l.rungs, r.Info)
		l.lockers[r.Name] = r.Locker
	}
	return l
}

// Rungs lists every rung in ladder order.
func (l *Ladder) Rungs() []Info { return append([]Info(nil), l.rungs...) }

// Names lists every rung's name in ladder order.
func (l *Ladder) Names() []string {
	names := make([]string, len(l.rungs))
	for i, r := range l.rungs {
		names[i] = r.Name
	}
	return names
}

// Lookup returns the rung called name and its Locker (nil for the atomic
// ceiling), or false when there is no such rung.
func (l *Ladder) Lookup(name string) (Info, Locker, bool) {
	for _, r := range l.rungs {
		if r.Name == name {
			return r, l.lockers[name], true
		}
	}
	return Info{}, nil, false
}

// unavailable is a Locker that cannot work in this process.
type unavailable struct{ err error }

func (u unavailable) Obtain(context.Context, string, Call) (Lock, error) { return nil, u.err }
