package lock

import "github.com/redis/go-redis/v9"

// Rung describes one strategy of the ladder, for /strategies and reports.
type Rung struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Flaw    string `json:"flaw"`
	// Atomic marks the ceiling: no lock at all, because the whole
	// operation is one Lua script. Its Locker is nil.
	Atomic bool `json:"atomic,omitempty"`
}

// Ladder holds one Locker per rung, shared by every request of a process.
type Ladder struct {
	rungs   []Rung
	lockers map[string]Locker
}

// NewLadder builds every rung over one Redis client.
func NewLadder(rdb redis.Cmdable, o Options) *Ladder {
	l := &Ladder{lockers: make(map[string]Locker)}
	l.add(Rung{
		Name:    "none",
		Summary: "no lock: GET, check, SET straight away",
		Flaw:    "lost updates under any concurrency",
	}, None{})
	l.add(Rung{
		Name:    "local",
		Summary: "an in-process mutex per key (Java synchronized)",
		Flaw:    "excludes only within one process: oversells across instances",
	}, NewLocal(o))
	l.add(Rung{
		Name:    "lua",
		Summary: "SET key uuid NX PX ttl; release with a Lua compare-and-delete",
		Flaw:    "the lease still lapses when the business outlives the TTL",
	}, NewLua(rdb, o))
	l.add(Rung{
		Name:    "atomic",
		Summary: "no lock: one Lua script checks and decrements (or increments)",
		Flaw:    "none, but only when the whole operation fits in one script",
		Atomic:  true,
	}, nil)
	return l
}

func (l *Ladder) add(r Rung, lk Locker) {
	l.rungs = append(l.rungs, r)
	l.lockers[r.Name] = lk
}

// Rungs lists every rung in ladder order.
func (l *Ladder) Rungs() []Rung { return append([]Rung(nil), l.rungs...) }

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
func (l *Ladder) Lookup(name string) (Rung, Locker, bool) {
	for _, r := range l.rungs {
		if r.Name == name {
			return r, l.lockers[name], true
		}
	}
	return Rung{}, nil, false
}
