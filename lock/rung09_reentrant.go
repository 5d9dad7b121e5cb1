package lock

import (
	"context"
	_ "embed"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed rung09_reentrant_acquire.lua
	luaReentrantAcquireSrc string
	//go:embed rung09_reentrant_release.lua
	luaReentrantReleaseSrc string
	//go:embed rung09_reentrant_renew.lua
	luaReentrantRenewSrc string

	luaReentrantAcquire = redis.NewScript(luaReentrantAcquireSrc)
	luaReentrantRelease = redis.NewScript(luaReentrantReleaseSrc)
	luaReentrantRenew   = redis.NewScript(luaReentrantRenewSrc)
)

// Reentrant is Redisson's lock (docs/ladder.md, rung 9). Its fix is the
// watchdog: while the lock is held, a goroutine renews the lease every
// TTL/3, as long as the lock is still ours, so a business that outlives
// the TTL keeps its lock (rung 6's and 8's race), and a crashed process
// stops renewing and its lease lapses. The watchdog stops on the final
// release (the articles' version leaks its timer).
//
// Besides, as Redisson's, it is reentrant: the lock is a hash {owner: hold
// count}, the owner may take it again while holding it (the articles'
// testReEnter: the sale re-enters its own lock), and only the release that
// brings the count back to 0 frees it. That is a convenience, not a
// safety fix. Acquire, release and renewal are each one Lua script.
//
// The race it still shows: the watchdog runs in the holder's process, so
// it cannot save a process that is paused (a GC pause, SIGSTOP) or cut off
// from Redis for longer than the TTL. Nothing renews during the pause, the
// lease lapses, another owner enters, and the paused holder wakes up
// believing it still holds the lock: two holders, OVERSOLD.
//
// The owner is the Call's (Call.Owner); without one, each Obtain is a
// fresh owner, and Reentrant behaves as a plain lock.
type Reentrant struct {
	rdb    redis.Cmdable
	ttl    time.Duration
	ticker func(time.Duration) Ticker // Options.Ticker: its watchdogs renew by it

	mu        sync.Mutex
	watchdogs map[holder]*watchdog // the live watchdog of each held lock
}

// NewReentrant returns the reentrant, self-renewing lock, waiting as o
// says. Use one per process: it tracks the watchdogs of the locks its
// owners hold.
func NewReentrant(rdb redis.Cmdable, o Options) Locker {
	o = o.WithDefaults()
	r := &Reentrant{rdb: rdb, ttl: o.TTL, ticker: o.Ticker, watchdogs: make(map[holder]*watchdog)}
	return Poll(r, o)
}

// holder is one owner of one lock key.
type holder struct{ key, owner string }

// Try takes key for the call's owner if it is free, or enters it again
// when that owner already holds it. The outermost acquisition starts the
// watchdog.
func (r *Reentrant) Try(ctx context.Context, key string, c Call) (Lock, bool, error) {
	owner := c.Owner
	if owner == "" {
		owner = uuid.NewString()
	}
	count, err := luaReentrantAcquire.Run(ctx, r.rdb, []string{key}, owner, leaseMS(c.TTL(r.ttl))).Int64()
	if err != nil || count == 0 {
		return nil, false, wrap(err, "reentrant acquire", key)
	}

	ttl := c.TTL(r.ttl)
	h := holder{key: key, owner: owner}
	r.mu.Lock()
	wd := r.watchdogs[h]
	var stale *watchdog
	if count == 1 && c.Lease > 0 {
		// An explicit lease: no renewal (Redisson's rule). A watchdog
		// left from an earlier lease of ours is stale.
		stale, wd = wd, nil
		delete(r.watchdogs, h)
	} else if count == 1 {
		// The outermost acquisition. A watchdog still registered belongs
		// to an earlier lease of ours that lapsed: replace it.
		stale = wd
		wd = r.startWatchdog(h, ttl)
		r.watchdogs[h] = wd
	}
	r.mu.Unlock()
	if stale != nil {
		stale.stop()
	}
	return &reentrantLock{r: r, h: h, wd: wd, ttl: ttl}, true, nil
}

// forget unregisters wd, unless a newer watchdog has replaced it.
func (r *Reentrant) forget(h holder, wd *watchdog) {
	r.mu.Lock()
	if r.watchdogs[h] == wd {
		delete(r.watchdogs, h)
	}
	r.mu.Unlock()
}

// current reports whether wd is still the watchdog of h's lease.
func (r *Reentrant) current(h holder, wd *watchdog) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watchdogs[h] == wd
}

// watchdog renews one held lock's lease until stopped, or until a renewal
// finds the lock no longer ours.
func (r *Reentrant) startWatchdog(h holder, ttl time.Duration) *watchdog {
	return startWatchdog(r.ticker, ttl, func(ctx context.Context) (bool, error) {
		n, err := luaReentrantRenew.Run(ctx, r.rdb, []string{h.key}, h.owner, leaseMS(ttl)).Int64()
		return n != 0, err
	}, func(wd *watchdog) { r.forget(h, wd) })
}

// reentrantLock is one acquisition: the outermost one or a nested one.
type reentrantLock struct {
	r        *Reentrant
	h        holder
	wd       *watchdog     // the lock's watchdog when this acquisition began (nil with an explicit lease)
	ttl      time.Duration // the lease this acquisition took: an inner release refreshes it
	released atomic.Bool
}

// Release leaves the lock once. The release that brings the owner's count
// to 0 deletes the key and stops the watchdog. Releasing the same
// acquisition twice is ErrNotHeld and leaves the count alone.
func (l *reentrantLock) Release(ctx context.Context) error {
	if err := l.leaving(); err != nil {
		return err
	}
	n, err := luaReentrantRelease.Run(ctx, l.r.rdb, []string{l.h.key}, l.h.owner, leaseMS(l.ttl)).Int64()
	if err != nil {
		l.released.Store(false) // nothing changed: the caller may try again
		return fmt.Errorf("lock: reentrant release %s: %w", l.h.key, err)
	}
	return l.left(n)
}

var _ PipelineReleaser = (*reentrantLock)(nil)

// ReleaseIn is rung 9's Release in p: its script behind the business's
// last write (EVAL: a NOSCRIPT in a pipeline would skip it).
func (l *reentrantLock) ReleaseIn(ctx context.Context, p redis.Pipeliner) func() error {
	if err := l.leaving(); err != nil {
		return func() error { return err }
	}
	cmd := luaReentrantRelease.Eval(ctx, p, []string{l.h.key}, l.h.owner, leaseMS(l.ttl))
	return func() error {
		n, err := cmd.Int64()
		if err != nil {
			return fmt.Errorf("lock: reentrant release %s: %w", l.h.key, err)
		}
		return l.left(n)
	}
}

// leaving marks this acquisition released, or says why it cannot be:
// released already, or its lease lapsed.
func (l *reentrantLock) leaving() error {
	if !l.released.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %s: this acquisition was already released", ErrNotHeld, l.h.key)
	}
	if l.wd != nil && !l.r.current(l.h, l.wd) {
		// Our lease lapsed (its watchdog found it gone, or the owner has
		// taken the lock afresh since): the count in Redis, if any, is
		// a later acquisition's, not ours to decrement.
		l.wd.stop()
		return fmt.Errorf("%w: %s: the lease of this acquisition lapsed", ErrNotHeld, l.h.key)
	}
	return nil
}

// left ends a release whose script left the owner's count at n: still
// held, released (the watchdog stopped), or not ours any more.
func (l *reentrantLock) left(n int64) error {
	if n > 0 {
		return nil // still held by an outer acquisition
	}
	if l.wd != nil {
		l.r.forget(l.h, l.wd)
		l.wd.stop()
	}
	if n < 0 {
		return fmt.Errorf("%w: %s holds no count for this owner (the lease lapsed)", ErrNotHeld, l.h.key)
	}
	return nil
}
