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

// Etcd is etcd's own lock (docs/ladder.md, "Beyond Redis"): the client's
// concurrency.Mutex. Each waiter puts a key under the lock's prefix,
// attached to a lease that its session keeps alive; the key with the
// lowest create revision holds the lock, and each waiter watches only the
// deletion of the key just before its own. A dead holder's lease expires
// and its key goes with it.
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
// A Mutex belongs to one session (its key is named after the session's
// lease): two requests on one session would both believe they hold it. So
// each acquisition borrows a session of its own from a pool, and gives it
// back on release.
type Etcd struct {
	cli  *clientv3.Client
	ttl  int // seconds
	wait time.Duration
	pool sessionPool
}

// EtcdPrefix is the key prefix the locks live under: /lockladder/locks/<key>.
const EtcdPrefix = "/lockladder/locks/"

// NewEtcd returns the etcd Mutex lock over cli. Options.TTL, rounded up to
// whole seconds (etcd's lease granularity), is every session's lease;
// Options.Wait bounds a wait; wait modes do not apply (a waiter watches).
func NewEtcd(cli *clientv3.Client, o Options) *Etcd {
	o = o.withDefaults()
	return &Etcd{cli: cli, ttl: int(math.Ceil(o.TTL.Seconds())), wait: o.Wait}
}

// Obtain borrows a session, locks its Mutex within the call's bound and
// reads its key's create revision, the fencing token.
func (e *Etcd) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound := e.wait
	if c.Try != nil {
		bound = max(*c.Try, 0)
	}
	sctx, cancel := context.WithTimeout(ctx, max(bound, time.Second))
	s, err := e.pool.get(sctx, e.cli, e.ttl)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("lock: etcd: session: %w", err)
	}
	m := concurrency.NewMutex(s, EtcdPrefix+key)
	if bound == 0 {
		err = m.TryLock(ctx)
	} else {
		lctx, cancel := context.WithTimeout(ctx, bound)
		err = m.Lock(lctx)
		cancel()
	}
	switch {
	case errors.Is(err, concurrency.ErrLocked):
		e.pool.put(s)
		return nil, ErrBusy
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		e.pool.put(s)
		return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, err)
	case err != nil:
		e.pool.put(s)
		return nil, fmt.Errorf("lock: etcd: lock %s: %w", key, err)
	}
	// Our own key's create revision never changes once written: a
	// serializable read (the member's own store, no quorum round) is
	// enough, and one linearizable round trip less per holder.
	resp, err := e.cli.Get(ctx, m.Key(), clientv3.WithSerializable())
	if err != nil || len(resp.Kvs) == 0 {
		m.Unlock(context.WithoutCancel(ctx))
		e.pool.put(s)
		return nil, fmt.Errorf("lock: etcd: read %s back: %v (lease lost?)", m.Key(), err)
	}
	return &etcdLock{e: e, s: s, m: m, fence: resp.Kvs[0].CreateRevision}, nil
}

type etcdLock struct {
	e     *Etcd
	s     *concurrency.Session
	m     *concurrency.Mutex
	fence int64
	once  sync.Once
}

var _ Tokened = (*etcdLock)(nil)

func (l *etcdLock) Token() int64 { return l.fence }

// Release deletes our key, if it is still ours (its lease may have
// expired), and gives the session back.
func (l *etcdLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		defer l.e.pool.put(l.s)
		resp, derr := l.e.cli.Txn(ctx).If(l.m.IsOwner()).Then(clientv3.OpDelete(l.m.Key())).Commit()
		switch {
		case derr != nil:
			err = fmt.Errorf("lock: etcd: release %s: %w", l.m.Key(), derr)
		case !resp.Succeeded:
			err = ErrNotHeld // our key went with our lease
		default:
			err = nil
		}
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
