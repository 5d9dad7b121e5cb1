package lock

import (
	"context"
	"errors"
	"fmt"
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
	// Reenter says the rung lets the owner that holds a lock take it
	// again (Call.Owner): the articles' testReEnter. Any other rung would
	// wait for itself, holding the lock, until its wait bound.
	Reenter bool `json:"reenter,omitempty"`
	// Atomic marks a rung with no lock at all: its store does the whole
	// operation (the ceiling: one Lua script in Redis; db-optimistic: a
	// version check in the database). Its Locker is nil.
	Atomic bool `json:"atomic,omitempty"`
	// Store is where the rung's stock and counters live: "" for Redis,
	// "mariadb" for db-optimistic. GET /stock?lock=NAME reads them there.
	Store string `json:"store,omitempty"`
	// Unavailable, when set, says why this process cannot serve the rung:
	// the server it needs is missing. Its requests answer 503 with it.
	Unavailable string `json:"unavailable,omitempty"`
}

// StoreMariaDB is the Info.Store of a rung whose stock lives in MariaDB.
const StoreMariaDB = "mariadb"

// ErrNoServer is what a rung answers when the server it needs is missing.
var ErrNoServer = errors.New("lock: the server this lock needs is not running")

// ErrNoMasters is what redlock answers when the process was given no
// independent masters.
var ErrNoMasters = fmt.Errorf("%w: redlock needs independent masters (start the app with -masters a,b,c,d,e)", ErrNoServer)

// Unavailable is a Locker that cannot work in this process: every Obtain
// answers Err (the server it needs is missing, say).
type Unavailable struct{ Err error }

func (u Unavailable) Obtain(context.Context, string, Call) (Lock, error) { return nil, u.Err }
