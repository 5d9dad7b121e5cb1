package libs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/lockladder/lockladder/lock"
)

// Rueidislock is github.com/redis/rueidis v1.0.79's rueidislock, the lock
// of Redis's own Go client, called as its README shows: NewLocker with
// the lab's Redis (KeyMajority 1: one Redis), WithContext(ctx, name)
// waits for the lock and returns a context that the library cancels
// when the lock is lost (its keys deleted or expired, Redis down), the
// business, then the returned cancel, which releases it. Its keys live
// for lock.Options.TTL (KeyValidity) and a goroutine extends them every half
// of it. It runs with its README's DisableCache (see get): a waiter tries
// again every 20ms, and a lost key is learnt at the next extension.
//
// The business checks the lock's context before its write (the Lock's
// Context, which the handler's section passes down: a section whose
// context ended writes nothing, lock.ErrLost). What that saves: a slow
// business, whose lease the extension keeps, and a lease lost while the
// business is still running. What it cannot: a process frozen past its
// lease (a GC pause, SIGSTOP) freezes the extension and the check with
// it; when it wakes, its next instruction may be the write, before the
// library's goroutines have learnt from Redis that the keys are gone.
// The check is only as close to the write as one round trip is short.
type Rueidislock struct {
	opt       rueidis.ClientOption
	ttl, wait time.Duration

	mu     sync.Mutex
	locker rueidislock.Locker // made at the first Obtain: NewLocker dials
}

var _ lock.Locker = (*Rueidislock)(nil)

// RueidisOption is the rueidis client option for the Redis rdb talks to:
// its address (a cluster's nodes) and credentials, so that the library's
// client logs in as the lab's other clients do.
func RueidisOption(rdb redis.Cmdable) (rueidis.ClientOption, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return rueidis.ClientOption{InitAddress: []string{o.Addr}, Username: o.Username, Password: o.Password,
			Dialer: net.Dialer{Timeout: o.DialTimeout}}, nil
	case *redis.ClusterClient:
		o := c.Options()
		return rueidis.ClientOption{InitAddress: o.Addrs, Username: o.Username, Password: o.Password,
			Dialer: net.Dialer{Timeout: o.DialTimeout}}, nil
	}
	return rueidis.ClientOption{}, fmt.Errorf("%w: rueidislock needs the address of a go-redis client, not a %T", lock.ErrNoServer, rdb)
}

// NewRueidislock returns the library's lock on the Redis opt names:
// lock.Options.TTL is its KeyValidity, lock.Options.Wait the bound of a wait.
func NewRueidislock(opt rueidis.ClientOption, o lock.Options) *Rueidislock {
	o = o.WithDefaults()
	return &Rueidislock{opt: opt, ttl: o.TTL, wait: o.Wait}
}

// get returns the library's Locker, made the first time (again after a
// failure: Redis down when the first request came).
func (r *Rueidislock) get() (rueidislock.Locker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locker != nil {
		return r.locker, nil
	}
	// DisableCache, the README's setting for a Redis without client-side
	// caching, here on every Redis: with the cache on, the library loses
	// a wake-up (lib_rueidislock_wake_test.go stages it). Its waiters
	// sleep until an invalidation of the key or a release in their own
	// process. An attempt whose reply comes later than TryNextAfter
	// (20ms, the library's bound on an attempt) may have set the key; the
	// library then deletes it from the same connection, to which NOLOOP
	// tracking sends no invalidation, and signals no waiter: the lock is
	// free and the process's waiters sleep until another process touches
	// the key, or their bound (under make test's -race run on two cores, 7
	// of 8 waiters of TestLibRueidislockExcludes waited out their 10s).
	// Tracking without NOLOOP would wake them, but then each extension
	// invalidates the holder's own key and triggers the next: thousands
	// of scripts a second. With DisableCache each waiter tries again
	// every 20ms (TryNextAfter), and a lost key is learnt at the next
	// extension, not at once.
	opt := r.opt
	opt.DisableCache = true
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   opt,
		KeyMajority:    1,    // one Redis, as its README says
		NoLoopTracking: true, // Redis >= 7.0.5, as its README says
		KeyValidity:    r.ttl,
	})
	if err != nil {
		return nil, fmt.Errorf("lock: rueidislock: redis %v: %w", r.opt.InitAddress, err)
	}
	r.locker = l
	return l, nil
}

// Obtain waits in the library's WithContext until the call's bound
// (TryWithContext for try=0). The lock's context is not the request's:
// the library cancels it, and releases the lock, when its parent ends,
// and a holder runs its business to the end even if its client goes.
func (r *Rueidislock) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	l, err := r.get()
	if err != nil {
		return nil, err
	}
	parent, stop := context.WithCancel(context.WithoutCancel(ctx))
	bound := c.Bound(r.wait)
	if bound == 0 {
		held, cancel, err := l.TryWithContext(parent, key)
		switch {
		case errors.Is(err, rueidislock.ErrNotLocked):
			stop()
			return nil, fmt.Errorf("%w: rueidislock: %w", lock.ErrBusy, err)
		case err != nil:
			stop()
			return nil, fmt.Errorf("lock: rueidislock: %s: %w", key, err)
		}
		return &rueidisLock{ctx: held, cancel: cancel, stop: stop}, nil
	}
	type result struct {
		ctx    context.Context
		cancel context.CancelFunc
		err    error
	}
	got := make(chan result, 1)
	go func() {
		held, cancel, err := l.WithContext(parent, key)
		got <- result{held, cancel, err}
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case res := <-got:
		if res.err != nil {
			stop()
			return nil, fmt.Errorf("lock: rueidislock: %s: %w", key, res.err)
		}
		return &rueidisLock{ctx: res.ctx, cancel: res.cancel, stop: stop}, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	// Given up: end the wait; a lock it won meanwhile goes back at once.
	stop()
	if res := <-got; res.err == nil {
		res.cancel()
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: rueidislock: %w", lock.ErrNotObtained, ctx.Err())
	}
	return nil, fmt.Errorf("%w: rueidislock: waited %s", lock.ErrNotObtained, bound)
}

type rueidisLock struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   context.CancelFunc
	once   sync.Once
}

// Context is the library's lock context: cancelled when the lock is
// lost. The section checks it before its write.
func (l *rueidisLock) Context() context.Context { return l.ctx }

// Release calls the library's cancel, which deletes the keys; lock.ErrNotHeld
// when the library had already cancelled the lock's context (the lock
// was lost while held).
func (l *rueidisLock) Release(context.Context) error {
	err := lock.ErrNotHeld
	l.once.Do(func() {
		err = nil
		if l.ctx.Err() != nil {
			err = fmt.Errorf("%w: rueidislock: its context was cancelled while held: %w", lock.ErrNotHeld, context.Cause(l.ctx))
		}
		l.cancel()
		l.stop()
	})
	return err
}
