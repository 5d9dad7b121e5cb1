// Package lock is the ladder of lock strategies this lab compares.
//
// Every strategy is a Locker: Obtain waits (within a bound) until it holds
// the named lock and returns a Lock, whose Release gives it up. The business
// step that runs between the two is deliberately a non-atomic
// read-modify-write (see package inventory), so any gap in mutual exclusion
// shows up as an oversold stock or a lost update.
//
// The files are numbered by rung. Read them in order: each one names the
// race it shows, and the next one names the fix.
//
//	rung00_none.go          no lock at all: lost updates
//	rung01_local.go         an in-process mutex: safe in one process only
//	rung02_setnx.go         SETNX, DEL: a dead holder never releases
//	rung03_setnx_expire.go  SETNX, then EXPIRE: a crash between them, the same
//	rung04_setnx_px.go      SET NX PX: a lapsed lease, and A's DEL frees B's lock
//	rung05_check_del.go     an owner token, GET then DEL: still two steps
//	rung06_lua.go           compare-and-delete in one script: the lease still lapses
//	rung07_getset.go        the GETSET expiry-timestamp algorithm: trusts clocks
//	rung08_reentrant.go     a hash {owner: count} and a watchdog: not against pauses
//	rung09_redlock.go       a majority of 5 masters: not against pauses either
//	rung10_fenced.go        a fencing token the storage checks: safe
//
// The ceiling needs no lock: inventory's one-script sale.
package lock

import (
	"context"
	"errors"
	"time"
)

var (
	// ErrNotObtained means the lock could not be had within the wait bound.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld means a release found the lock gone or held by someone else.
	ErrNotHeld = errors.New("lock: not held")
)

// Locker obtains named locks. One Locker serves many concurrent callers; the
// state of one acquisition lives in the Lock it returns.
type Locker interface {
	// Obtain blocks until it holds key, the wait bound passes
	// (ErrNotObtained), or ctx ends (ErrNotObtained wrapping ctx.Err()).
	// Other errors come from the back end (Redis unreachable, say).
	Obtain(ctx context.Context, key string) (Lock, error)
}

// Lock is one held acquisition.
type Lock interface {
	// Release gives the lock up. It returns ErrNotHeld when the lock was no
	// longer ours to release (it expired, and perhaps another holder has it).
	Release(ctx context.Context) error
}

// Options are shared by every Redis rung, so that rungs differ only by the
// fix that separates them, never by how long or how they wait.
type Options struct {
	// TTL is the lease: how long the lock lives in Redis without a release.
	// Default 2s.
	TTL time.Duration
	// Wait bounds how long Obtain tries before giving up with
	// ErrNotObtained. Default 5s.
	Wait time.Duration
	// Retry makes the backoff for one Obtain. Default FixedSleep(10ms): the
	// articles' "sleep and try again", with a shorter sleep.
	Retry func() Backoff
	// Clock is what rungs that compare timestamps (getset) read as "now".
	// Default time.Now; a skewed instance runs it ahead.
	Clock func() time.Time
}

func (o Options) withDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = 2 * time.Second
	}
	if o.Wait <= 0 {
		o.Wait = 5 * time.Second
	}
	if o.Retry == nil {
		o.Retry = FixedSleep(10 * time.Millisecond)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}
