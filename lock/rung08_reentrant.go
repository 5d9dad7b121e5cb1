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
	//go:embed rung08_reentrant_acquire.lua
	luaReentrantAcquireSrc string
	//go:embed rung08_reentrant_release.lua
	luaReentrantReleaseSrc string
	//go:embed rung08_reentrant_renew.lua
	luaReentrantRenewSrc string

	luaReentrantAcquire = redis.NewScript(luaReentrantAcquireSrc)
	luaReentrantRelease = redis.NewScript(luaReentrantReleaseSrc)
	luaReentrantRenew   = redis.NewScript(luaReentrantRenewSrc)
)

type ownerKey struct{}

// WithOwner returns a context whose reentrant acquisitions belong to owner.
// The articles' owner is "<process uuid>:<thread id>"; Go has no thread
// ids, so the owner travels in the context instead. It must be unique
// across every process sharing the Redis, and stands for one line of
// execution: goroutines that share an owner share the lock.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner WithOwner put in ctx, and false when there is
// none (or it is empty).
func OwnerFrom(ctx context.Context) (string, bool) {
	owner, ok := ctx.Value(ownerKey{}).(string)
	return owner, ok && owner != ""
}

// Reentrant keeps the lock in a hash {owner: hold count}: the owner may
// take it again while holding it (001's testReEnter: sale() re-enters its
// own lock), and only the release that brings the count back to 0 frees
// it. Acquire, release and renewal are each one Lua script.
//
// The race it fixes is rung 6's slow business: while the lock is held, a
// watchdog goroutine renews the lease every TTL/3, as long as the hash
// still holds our owner, so a business that outlives the TTL keeps its
// lock, and a crashed process stops renewing and its lease lapses. The
// watchdog stops on the final release (001's version leaks its timer).
//
// The race it still shows: the watchdog runs in the holder's process, so
// it cannot save a process that is paused (a GC pause, SIGSTOP) or cut off
// from Redis for longer than the TTL. Nothing renews during the pause, the
// lease lapses, another owner enters, and the paused holder wakes up
// believing it still holds the lock: two holders, OVERSOLD.
//
// Obtain takes the owner from the context (WithOwner); without one, each
// Obtain is a fresh owner, and Reentrant behaves as a plain lock.
type Reentrant struct {
	rdb  redis.Cmdable
	opts Options

	mu        sync.Mutex
	watchdogs map[holder]*watchdog // the live watchdog of each held lock
}

var _ Locker = (*Reentrant)(nil)

// NewReentrant returns the reentrant, self-renewing Locker. Use one per
// process: it tracks the watchdogs of the locks its owners hold.
func NewReentrant(rdb redis.Cmdable, o Options) *Reentrant {
	return &Reentrant{rdb: rdb, opts: o.withDefaults(), watchdogs: make(map[holder]*watchdog)}
}

// holder is one owner of one lock key.
type holder struct{ key, owner string }

// Obtain takes key for the context's owner, or enters it again when that
// owner already holds it. The outermost acquisition starts the watchdog.
func (r *Reentrant) Obtain(ctx context.Context, key string) (Lock, error) {
	owner, ok := OwnerFrom(ctx)
	if !ok {
		owner = uuid.NewString()
	}
	var count int64
	err := acquire(ctx, r.opts, r.opts.waiter(ctx, key), func(ctx context.Context) (bool, error) {
		n, err := luaReentrantAcquire.Run(ctx, r.rdb, []string{key}, owner, leaseMS(r.opts.TTL)).Int64()
		if err != nil {
			return false, fmt.Errorf("lock: reentrant acquire %s: %w", key, err)
		}
		count = n
		return n > 0, nil
	})
	if err != nil {
		return nil, err
	}

	h := holder{key: key, owner: owner}
	r.mu.Lock()
	wd := r.watchdogs[h]
	var stale *watchdog
	if count == 1 {
		// The outermost acquisition. A watchdog still registered belongs
		// to an earlier lease of ours that lapsed: replace it.
		stale = wd
		wd = r.startWatchdog(h)
		r.watchdogs[h] = wd
	}
	r.mu.Unlock()
	if stale != nil {
		stale.stop()
	}
	return &reentrantLock{r: r, h: h, wd: wd}, nil
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
func (r *Reentrant) startWatchdog(h holder) *watchdog {
	return startWatchdog(r.opts.TTL, func(ctx context.Context) (bool, error) {
		n, err := luaReentrantRenew.Run(ctx, r.rdb, []string{h.key}, h.owner, leaseMS(r.opts.TTL)).Int64()
		return n != 0, err
	}, func(wd *watchdog) { r.forget(h, wd) })
}

// reentrantLock is one acquisition: the outermost one or a nested one.
type reentrantLock struct {
	r        *Reentrant
	h        holder
	wd       *watchdog // the lock's watchdog when this acquisition began
	released atomic.Bool
}

// Release leaves the lock once. The release that brings the owner's count
// to 0 deletes the key and stops the watchdog. Releasing the same
// acquisition twice is ErrNotHeld and leaves the count alone.
func (l *reentrantLock) Release(ctx context.Context) error {
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
	n, err := luaReentrantRelease.Run(ctx, l.r.rdb, []string{l.h.key}, l.h.owner, l.r.opts.Notifier.Channel()).Int64()
	if err != nil {
		l.released.Store(false) // nothing changed: the caller may try again
		return fmt.Errorf("lock: reentrant release %s: %w", l.h.key, err)
	}
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

// leaseMS is a lease in whole milliseconds for PEXPIRE, at least 1 (0
// would delete the key).
func leaseMS(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
