package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Etcd is etcd's lock recipe (docs/ladder.md, "Beyond Redis"), the one
// the client's concurrency.Mutex implements. Each waiter puts a key under
// the lock's prefix, attached to a lease that its session keeps alive;
// the key with the lowest create revision holds the lock, and each waiter
// watches only the deletion of the key just before its own. A dead
// holder's lease expires and its key goes with it.
//
// The create revision of the holder's key grows from one holder to the
// next, across the cluster: the lab uses it as a fencing token (the Lock
// is Tokened), and the stock's scripts refuse a write from a token lower
// than one already seen, as rung 11 does with its counter.
//
// What it shows: a holder paused past its lease (GC, SIGSTOP) loses its
// key and the next waiter enters, as with every lease; here the paused
// holder's late write is refused, so the data stays right.
//
// Three things differ from concurrency.Mutex, all for speed, none for
// safety (etcdMutex): a process's requests for one key wait in a line in
// memory (localQueue), so that etcd holds one waiting key per instance,
// not one per request; a process keeps one watch per lock open and every
// waiter listens to it (etcdWatches), instead of a watch per waiter that
// etcd may start behind the store and catch up only every 100 ms; and
// the transaction that queues a waiter's key also lists the keys before
// it, so no read comes between a release and the next holder.
// concurrency.Mutex watches from the revision of its last read, always
// among those lagging watchers: with 100 requests each in etcd (one key
// each, every read a sort of them all) it did 206 to 258 requests a
// second through nginx, etcd's CPU most of the cost.
//
// A key belongs to one session (it is named after the session's lease):
// two requests on one session would both believe they hold it. So each
// acquisition borrows a session of its own from a pool, and gives it back
// on release.
type Etcd struct {
	cli     *clientv3.Client
	ttl     int // seconds
	wait    time.Duration
	pool    sessionPool
	line    localQueue
	watches etcdWatches
}

// EtcdPrefix is the key prefix the locks live under: /lockladder/locks/<key>/.
const EtcdPrefix = "/lockladder/locks/"

// NewEtcd returns the etcd lock over cli. Options.TTL, rounded up to
// whole seconds (etcd's lease granularity), is every session's lease;
// Options.Wait bounds a wait; wait modes do not apply (a waiter watches).
func NewEtcd(cli *clientv3.Client, o Options) *Etcd {
	o = o.withDefaults()
	return &Etcd{cli: cli, ttl: int(math.Ceil(o.TTL.Seconds())), wait: o.Wait, watches: etcdWatches{cli: cli}}
}

// Obtain waits for the head of this process's line for key, borrows a
// session and queues its key in etcd, all within the call's bound.
func (e *Etcd) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound := c.bound(e.wait)
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t, err := e.line.wait(wctx, key, bound)
	if err != nil {
		return nil, err
	}
	sctx, scancel := context.WithTimeout(ctx, max(bound, time.Second))
	s, err := e.pool.get(sctx, e.cli, e.ttl)
	scancel()
	if err != nil {
		t.leave()
		return nil, fmt.Errorf("lock: etcd: session: %w", err)
	}
	m := &etcdMutex{cli: e.cli, lease: s.Lease(), pfx: EtcdPrefix + key + "/"}
	if bound == 0 {
		err = m.tryLock(ctx)
	} else {
		err = m.lock(wctx, &e.watches)
	}
	if err != nil {
		e.pool.put(s)
		t.leave()
		switch {
		case errors.Is(err, ErrBusy):
			return nil, err
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, err)
		}
		return nil, fmt.Errorf("lock: etcd: lock %s: %w", key, err)
	}
	return &etcdLock{e: e, s: s, m: m, t: t}, nil
}

type etcdLock struct {
	e    *Etcd
	s    *concurrency.Session
	m    *etcdMutex
	t    *turn
	once sync.Once
}

var _ Tokened = (*etcdLock)(nil)

func (l *etcdLock) Token() int64 { return l.m.rev }

// Release deletes our key, if it is still ours (its lease may have
// expired), gives the session back and lets the next request of this
// process in.
func (l *etcdLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		defer l.t.leave()
		defer l.e.pool.put(l.s)
		err = l.m.unlock(ctx)
	})
	return err
}

// sessionPool keeps idle sessions (each a lease kept alive) for reuse. A
// session whose lease has ended (the process was paused past it, etcd was
// down) is dropped.
type sessionPool struct {
	mu   sync.Mutex
	idle []*concurrency.Session
}

func (p *sessionPool) get(ctx context.Context, cli *clientv3.Client, ttl int) (*concurrency.Session, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		s := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-s.Done():
			continue // its lease ended
		default:
			p.mu.Unlock()
			return s, nil
		}
	}
	p.mu.Unlock()
	// A new lease: granted within the call's own bound (etcd down must
	// not hang it), kept alive for the process's life.
	var s *concurrency.Session
	err := bounded(ctx, func() error {
		var err error
		s, err = concurrency.NewSession(cli, concurrency.WithTTL(ttl), concurrency.WithContext(context.Background()))
		return err
	})
	return s, err
}

func (p *sessionPool) put(s *concurrency.Session) {
	select {
	case <-s.Done():
		return
	default:
	}
	p.mu.Lock()
	p.idle = append(p.idle, s)
	p.mu.Unlock()
}
