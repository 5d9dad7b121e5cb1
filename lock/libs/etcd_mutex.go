package libs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockladder/lockladder/lock"
)

// EtcdMutex is go.etcd.io/etcd/client/v3/concurrency v3.7.3's Mutex as
// shipped, called as its examples show, a library rung beside the lab's
// etcd rung (rung 15, the same recipe): NewSession(cli, WithTTL(lease)),
// NewMutex(session, prefix), Lock(ctx), the business, Unlock, and the
// session's Close. One session per acquisition, as the examples have one
// per contender: the key a Mutex puts is named after its session's lease,
// so two requests sharing one session would both hold it.
//
// What it shows, beside rung 15: the same lock, written without a fence.
// A holder paused past its session's lease (GC, SIGSTOP) loses its key,
// the next waiter's watch lets it in, and the paused holder wakes and
// writes over it: Jepsen's finding on etcd 3.4.3. Rung 15 passes the
// key's create revision (Mutex.Header's revision, for the library) to
// the store as a fencing token, and the late write is refused; here it
// lands.
//
// The session's lease is lock.Options.TTL in whole seconds, at least 1 (etcd's
// granularity, and the server may raise it to its own minimum); the
// session keeps it alive while the business runs. Lock waits on a watch,
// bounded by the request's try (the library takes its own key back out
// when the context ends first); try=0 calls TryLock.
type EtcdMutex struct {
	cli  *clientv3.Client
	ttl  int // seconds
	wait time.Duration
}

// EtcdMutexPrefix is where the library's locks live: /lockladder/etcd-mutex/<key>/.
const EtcdMutexPrefix = "/lockladder/etcd-mutex/"

var _ lock.Locker = (*EtcdMutex)(nil)

// NewEtcdMutex returns the library's Mutex over cli.
func NewEtcdMutex(cli *clientv3.Client, o lock.Options) *EtcdMutex {
	o = o.WithDefaults()
	return &EtcdMutex{cli: cli, ttl: max(int(math.Ceil(o.TTL.Seconds())), 1), wait: o.Wait}
}

// Obtain opens a session, and locks a Mutex on it, both within the call's
// bound.
func (e *EtcdMutex) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	bound := e.wait
	if c.Try != nil {
		bound = max(*c.Try, 0)
	}
	wctx, cancel := context.WithTimeout(ctx, max(bound, time.Second))
	defer cancel()
	// The session lives until Release, past the request's context; the
	// grant that opens it must not outlast the wait (etcd down).
	sctx, end := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(wctx, end)
	s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl), concurrency.WithContext(sctx))
	if !stop() {
		err = errors.Join(err, wctx.Err())
	}
	if err != nil {
		end()
		if wctx.Err() != nil {
			return nil, fmt.Errorf("%w: etcd-mutex: session: %w", lock.ErrNotObtained, err)
		}
		return nil, fmt.Errorf("lock: etcd-mutex: session: %w", err)
	}
	m := concurrency.NewMutex(s, EtcdMutexPrefix+key)
	if bound == 0 {
		err = m.TryLock(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, bound)
		err = m.Lock(wctx)
		cancel()
	}
	if err != nil {
		s.Close()
		end()
		switch {
		case errors.Is(err, concurrency.ErrLocked):
			return nil, fmt.Errorf("%w: %w", lock.ErrBusy, err)
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			return nil, fmt.Errorf("%w: etcd-mutex: waited %s: %w", lock.ErrNotObtained, bound, err)
		}
		return nil, fmt.Errorf("lock: etcd-mutex: lock %s: %w", key, err)
	}
	return &etcdMutexLock{s: s, m: m, end: end}, nil
}

type etcdMutexLock struct {
	s    *concurrency.Session
	m    *concurrency.Mutex
	end  context.CancelFunc
	once sync.Once
}

// Release unlocks (deletes our key: no error if it is already gone) and
// closes the session, revoking its lease. A lease etcd no longer knows
// expired while we held the lock: lock.ErrNotHeld.
func (l *etcdMutexLock) Release(ctx context.Context) error {
	err := lock.ErrNotHeld
	l.once.Do(func() {
		defer l.end()
		uerr := l.m.Unlock(ctx)
		cerr := l.s.Close()
		switch {
		case errors.Is(cerr, rpctypes.ErrLeaseNotFound):
			err = fmt.Errorf("%w: etcd-mutex: the session's lease had expired: %w", lock.ErrNotHeld, cerr)
		case uerr != nil:
			err = fmt.Errorf("lock: etcd-mutex: unlock: %w", uerr)
		default:
			err = nil // a failed revoke only leaves the lease to expire
		}
	})
	return err
}
