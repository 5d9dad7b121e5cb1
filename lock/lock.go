// Package lock is the ladder of lock strategies this lab compares: the
// rungs of docs/ladder.md, numbered in file names, read top to bottom. A
// rung is one file, or several sharing its number (its Lua scripts, its
// helpers).
//
// A rung is one way to take a lock: a Rung makes one attempt (Try) and
// says whether it got the lock, and its Lock gives it back. How a request
// waits between attempts is not the rung's business but a layer the
// ladder composes (Poll): line up in the process behind one contender
// (the default), sleep a fixed time (the articles), back off
// exponentially, or sleep until the lock's deletion is announced. The
// business step that runs between Obtain and Release is deliberately a
// non-atomic read-modify-write (package inventory), so any gap in mutual
// exclusion shows up as an oversold stock or a lost update.
//
// The rungs on Redis:
//
//	rung00_none.go          no lock at all: lost updates
//	rung01_local.go         an in-process mutex: safe in one process only
//	rung02_setnx.go         SETNX, DEL: a dead holder never releases
//	rung03_setnx_expire.go  SETNX, then EXPIRE: a crash between them, the same
//	rung04_setnx_px.go      SET NX PX: a lapsed lease, and A's DEL frees B's lock
//	rung05_check_del.go     an owner token, GET then DEL: still two steps
//	rung06_lua.go           compare-and-delete in one script
//	                        (rung06_lua_release.lua): the lease still lapses
//	rung07_del_setnx.go     an expiry timestamp; an expired lock DELeted, then
//	                        SETNX: two waiters both take it
//	rung08_getset.go        the GETSET expiry-timestamp algorithm: trusts clocks
//	rung09_reentrant.go     a watchdog renews the lease (and the owner may
//	                        re-enter), scripts rung09_reentrant_*.lua: not
//	                        against pauses
//	rung10_redlock.go       a majority of 5 masters (Attempt: the algorithm):
//	                        not against pauses either;
//	rung10_redlock_round.go one call sent to every master at once, and its votes
//	rung10_redlock_relay.go the lock relayed to a next holder by swapping
//	                        tokens on the masters, as one attempt (Relay)
//	rung11_fenced.go        a fencing token the storage checks
//	                        (rung11_fenced_acquire.lua): safe
//	rung12_fair.go          a FIFO queue in Redis, the lock handed to the next
//	                        live waiter on release (rung12_fair_*.lua): no
//	                        herd, no luck
//	rung13_cohort.go        fair's lock passed in memory to the process's next
//	                        request, up to a bound, before it goes back:
//	                        fewer round trips, less fair between instances
//
// The rungs of the other back ends:
//
//	rung14_zookeeper.go     ZooKeeper's recipe (ephemeral sequential znodes):
//	                        a holder frozen past its session is not fenced
//	rung15_etcd.go          etcd's recipe (concurrency.Mutex's), its create
//	                        revision a fencing token
//	rung16_db_for_update.go SELECT ... FOR UPDATE in MariaDB: no lease, a
//	                        frozen holder stalls everyone
//	rung17_pg_advisory.go   PostgreSQL's session advisory lock (pgx): a
//	                        session cut under its holder frees it
//	rung18_pg_advisory_xact.go the transaction advisory lock: the same, learnt
//	                        at COMMIT
//	rung19_pg_advisory_fenced.go a token drawn on the holder's session
//	                        fences the cut holder's write
//
// The library rungs (package libs, one file per library) and the speed
// layer (package speed) live beside this package; package ladder puts
// them all on one ladder, in one table that says which rung runs with
// which wrapper.
//
// db-optimistic and the ceiling, atomic, take no lock: their stores in
// package inventory do the work (a version column in MariaDB; one Lua
// script in Redis). Package ladder lists every rung in order, with its
// flaw (the Ladder behind /strategies); info.go holds what it says of each.
//
// lock.go (this file) holds what every rung shares: Locker, Lock (and
// what a held lock may hand its critical section), Call, Options, the
// errors. example_test.go takes and gives back one rung's lock.
//
// The waiting: wait.go (Poll, the loop the rungs that take one attempt at
// a time wait in, its pauses, and the waiters' timer; the articles' fixed
// sleep by default, and the head of a line's way, HeadWaiter, that
// package speed's Line waits by; the Notifier interface, that package
// lock/speed/notify's one subscription per process fills: the lock's
// deletions announced by Redis itself, and fair's handoffs),
// rung12_fair_handoff.go (how fair's waiters wait for a handoff by name),
// rung10_redlock_round_watch.go (how the explorer hears redlock's rounds),
// watchdog.go
// (the renewal rungs 9 and 12 share, and with rung 12 the cohorts),
// clock.go (the Ticker watchdogs renew by; Options.Ticker makes them,
// Options.After times the waits, and the explorer gives its own of both),
// counts.go (the retries and handoffs GET /metrics reports).
//
// The speed is not in this package: around the rungs and not in them,
// it changes what a section costs, never what it is safe against. A
// process's line in front of the polling rungs, redlock's (which passes
// or relays the lock down it), and the cohorts' pipes (a cohort's
// commands down one ordered pipeline per line, its release behind them;
// cohort-carry's values carried from one section to the next) are
// package speed's; the notifications waiters sleep on are
// lock/speed/notify's; the goroutines redlock's rounds run on are
// internal/workers; the etcd rung's watches and sessions, kept per
// process, are internal/etcdshare. A release that rides the business's
// last write (PipelineReleaser, one round trip for both) is the rung's
// own release in a pipeline, beside its Release in the rung's file.
package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotObtained means the lock could not be had within the wait bound.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld means a release found the lock gone or held by someone else.
	ErrNotHeld = errors.New("lock: not held")
	// ErrLost means the lock said, through its context (a Context
	// method), that it was lost while held: the section wrote nothing.
	ErrLost = errors.New("lock: lost while held")
	// ErrBusy means a call that tries once (Call.Try 0) found the lock
	// held. It is an ErrNotObtained.
	ErrBusy = fmt.Errorf("%w: busy, and one attempt was asked", ErrNotObtained)
)

// Locker obtains named locks. One Locker serves many concurrent callers; the
// state of one acquisition lives in the Lock it returns.
type Locker interface {
	// Obtain blocks until it holds key, the wait bound passes
	// (ErrNotObtained), or ctx ends (ErrNotObtained wrapping ctx.Err()).
	// Other errors come from the back end (Redis unreachable, say).
	Obtain(ctx context.Context, key string, c Call) (Lock, error)
}

// Call is what one Obtain asks for besides the key, passed explicitly.
// The zero Call waits the Locker's default way, as a fresh owner.
type Call struct {
	// Wait is how this call waits for a busy lock: WaitFixed, WaitBackoff,
	// WaitNotify, WaitQueue, WaitCohort or WaitRelay. "" is the Locker's default (Options.WaitMode,
	// else the rung's own).
	Wait WaitMode
	// Owner is who takes the lock, for the reentrant rung: an owner that
	// holds it may take it again. The articles' owner is "<process
	// uuid>:<thread id>"; Go has no thread ids, so the caller names one.
	// "" is a fresh owner for this call.
	Owner string
	// Try bounds how long this call waits for the lock, as Java's
	// tryLock(time, unit) and Redisson's tryLock(waitTime, leaseTime): a
	// pointer to 0 makes one attempt (ErrBusy when the lock is held), nil
	// waits the Locker's bound (Options.Wait).
	Try *time.Duration
	// Lease, when positive, is this call's lease instead of Options.TTL,
	// and (Redisson's rule) a lease given means no renewal: the rungs with
	// a watchdog (reentrant, fair) run without one.
	Lease time.Duration
	// Skew runs this call's clock ahead of Options.Clock by that much: a
	// fault the lab arms (skew=), standing for an instance whose clock
	// runs ahead. Only the rungs that judge expiries by the clock
	// (del-setnx, getset) read it.
	Skew time.Duration
}

// TTL is the lease of a call: its own, or def.
func (c Call) TTL(def time.Duration) time.Duration {
	if c.Lease > 0 {
		return c.Lease
	}
	return def
}

// Bound is how long a call may wait for the lock: its Try (0 for one
// attempt), or def, the Locker's wait bound.
func (c Call) Bound(def time.Duration) time.Duration {
	if c.Try != nil {
		return max(*c.Try, 0)
	}
	return def
}

// Lock is one held acquisition. Release is what every lock answers. What
// some locks also hand the critical section they guard, each through a
// method of its own that the section asks for: a fencing token
// (Tokened), a release that rides the business's last write
// (PipelineReleaser), an ordered pipe (Piped), a carried value (Carrier),
// a context the lock ends when it learns it is lost (Context, as
// rueidislock's). A rung that offers nothing more needs nothing more than
// Release.
type Lock interface {
	// Release gives the lock up. It returns ErrNotHeld when the lock was no
	// longer ours to release (it expired, and perhaps another holder has it).
	Release(ctx context.Context) error
}

// A release may ride the business's last write: a section ends with a
// write (the stock's SET) and then a release, two round trips in series;
// queued in one pipeline, they cost one. Redis runs a pipeline's commands
// in order, so the write still lands before the lock is given up, exactly
// as with a separate Release after it: the rung's lesson is the same
// either way. The rungs whose release is one command or one script offer
// it, beside their Release.

// PipelineReleaser is a held lock whose release can ride in the same
// pipeline as the business's last write: one round trip for both.
type PipelineReleaser interface {
	// ReleaseIn queues the release in p; after p has run, the function
	// it returns reports what Release would have. Once queued, Release
	// reports ErrNotHeld.
	ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error
}

// Piped is a held lock whose sections send their commands to Redis down
// one ordered pipe (a Cohort's, with package speed's pipe).
type Piped interface {
	// Send queues q behind every command queued under the lock before it:
	// q adds its commands to a pipeline on rdb and returns how to read
	// their outcome; wait blocks until that outcome is known. A command
	// that is waited for goes out at once. later says it need not: a
	// write after which the section lets go of the lock goes out with the
	// next section's first command, or with the release to Redis (or,
	// when neither comes soon, on its own).
	Send(rdb redis.Cmdable, q func(redis.Pipeliner) func() error, later bool) (wait func() error)
}

// Carrier is a held lock that carries values from one section to the
// next, and commits their writes in order (package speed's CohortCarry).
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

// Rung is one lock strategy's mechanism, without the waiting: Try makes
// one attempt at key. It returns the held Lock, or false when someone else
// holds it; an error means the back end failed (Redis unreachable), not
// that the lock was busy. Poll turns a Rung into a Locker that waits.
type Rung interface {
	Try(ctx context.Context, key string, c Call) (l Lock, ok bool, err error)
}

// Options configure a Locker. Every Redis rung takes the same ones, so that
// rungs differ only by the fix that separates them, never by how long or
// how they wait. Zero values take the defaults.
type Options struct {
	// TTL is the lease: how long the lock lives in Redis without a release.
	// Default 2s.
	TTL time.Duration
	// Wait bounds how long Obtain tries before giving up with
	// ErrNotObtained. Default 5s.
	Wait time.Duration
	// WaitMode is how Obtain waits for a busy lock unless the Call says
	// otherwise. Default "": each rung's own, WaitQueue for the rungs that
	// poll (WaitFixed is the articles' loop), WaitRelay for redlock.
	WaitMode WaitMode
	// Retry makes the sleeps of WaitFixed for one Obtain. Default
	// FixedSleep(10ms): the articles' "sleep and try again", with a
	// shorter sleep.
	Retry func() Backoff
	// Backoff makes the sleeps of WaitBackoff (and of WaitNotify without a
	// Notifier) for one Obtain. Default ExponentialBackoff(1ms, 32ms,
	// FullJitter).
	Backoff func() Backoff
	// Notifier hears the lock keys' deletions that Redis announces, and
	// fair's handoffs: WaitNotify waiters and fair's queue wake on them.
	// Default nil: WaitNotify polls as WaitBackoff, and fair's waiters find
	// their handoff by polling.
	Notifier Notifier
	// Clock is what rungs that compare timestamps (getset) read as "now".
	// Default time.Now; a skewed instance runs it ahead.
	Clock func() time.Time
	// After is the timer a wait between two tries sleeps on: a waiter
	// that sleeps d tries again when the channel delivers. Default nil:
	// a time.Timer per waiter, reused for its every wait. The explorer
	// delivers it when its search decides that the waiter tries again.
	After func(d time.Duration) <-chan time.Time
	// Ticker makes the Tickers watchdogs renew by (reentrant, fair, the
	// cohorts, redislock-refresh). Default RealTicker.
	Ticker func(every time.Duration) Ticker
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.TTL <= 0 {
		o.TTL = 2 * time.Second
	}
	if o.Wait <= 0 {
		o.Wait = 5 * time.Second
	}
	if o.Retry == nil {
		o.Retry = FixedSleep(10 * time.Millisecond)
	}
	if o.Backoff == nil {
		o.Backoff = ExponentialBackoff(time.Millisecond, 32*time.Millisecond, FullJitter)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Ticker == nil {
		o.Ticker = RealTicker
	}
	return o
}

// releaseResult turns a release script's 1 or 0 into nil or ErrNotHeld.
func releaseResult(key string, n int64, err error) error {
	switch {
	case err != nil && !errors.Is(err, redis.Nil):
		return fmt.Errorf("lock: release %s: %w", key, err)
	case n == 0:
		return ErrNotHeld
	}
	return nil
}

// leaseMS is a lease in whole milliseconds for PEXPIRE, at least 1 (0
// would delete the key).
func leaseMS(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// wrap names the command that failed, or returns nil for no error.
func wrap(err error, cmd, key string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("lock: %s %s: %w", cmd, key, err)
}
