package lock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockladder/lockladder/internal/etcdshare"
	"github.com/lockladder/lockladder/internal/line"
)

// Etcd is etcd's lock recipe (docs/ladder.md, "Beyond Redis"), the one
// the client's concurrency.Mutex implements:
//
//   - a session: a lease that the client keeps alive while the process
//     lives; when the process dies or pauses past it, the lease expires;
//   - a key under the lock's prefix, named after the lease and attached to
//     it, put only if it is not there yet; its create revision, which etcd
//     gives every write in order across the cluster, is our place in line;
//   - the key with the lowest create revision holds the lock; each waiter
//     waits for the deletion of the keys before its own (concurrency.Mutex
//     watches the one just before, then looks again): no herd;
//   - release deletes our key, if it is still ours.
//
// A dead holder's lease expires and its key goes with it. The create
// revision grows from one holder to the next: the lab uses it as a
// fencing token (the Lock is Tokened), and the stock's scripts refuse a
// write from a token lower than one already seen, as rung 11 does.
//
// What it shows: a holder paused past its lease (GC, SIGSTOP) loses its
// key and the next waiter enters, as with every lease; here the paused
// holder's late write is refused, so the data stays right.
//
// Its speed is around the recipe, not in it: a process's requests line up
// in memory first (localQueue), so that etcd holds one waiting key per
// instance, not one per request; sessions are reused
// (internal/etcdshare); and a waiter listens to one watch per lock
// that its process keeps open (internal/etcdshare).
type Etcd struct {
	cli     *clientv3.Client
	ttl     int // seconds
	wait    time.Duration
	queue   line.Queue
	pool    etcdshare.Sessions
	watches etcdshare.Watches
}

// EtcdPrefix is the key prefix the locks live under: /lockladder/locks/<key>/.
const EtcdPrefix = "/lockladder/locks/"

// NewEtcd returns the etcd lock over cli. Options.TTL, rounded up to
// whole seconds (etcd's lease granularity), is every session's lease;
// Options.Wait bounds a wait; wait modes do not apply (a waiter watches).
func NewEtcd(cli *clientv3.Client, o Options) *Etcd {
	o = o.WithDefaults()
	return &Etcd{cli: cli, ttl: int(math.Ceil(o.TTL.Seconds())), wait: o.Wait, watches: etcdshare.Watches{Cli: cli}}
}

// Obtain waits for the head of this process's line for key, takes a
// session and queues its key in etcd, all within the call's bound.
func (e *Etcd) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound := c.Bound(e.wait)
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t, err := WaitTurn(wctx, &e.queue, key, bound)
	if err != nil {
		return nil, err
	}
	// A key belongs to one session (it is named after the session's
	// lease): two requests on one session would both believe they hold
	// it. So each acquisition takes a session of its own.
	sctx, scancel := context.WithTimeout(ctx, max(bound, time.Second))
	s, err := e.pool.Get(sctx, e.cli, e.ttl)
	scancel()
	if err != nil {
		t.Leave()
		return nil, fmt.Errorf("lock: etcd: session: %w", err)
	}
	m := &etcdMutex{cli: e.cli, lease: s.Lease(), pfx: EtcdPrefix + key + "/"}
	if bound == 0 {
		err = m.tryLock(ctx)
	} else {
		err = m.lock(wctx, &e.watches)
	}
	if err != nil {
		e.pool.Put(s)
		t.Leave()
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

// etcdMutex is concurrency.Mutex's recipe on the same keys (the lock's
// prefix, then the session's lease in hex), for one acquisition.
type etcdMutex struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	pfx   string // the lock's prefix, ending in "/"
	key   string // ours
	rev   int64  // our key's create revision: our place in line, and the fencing token
}

// errKeyLost: our key was deleted while we waited: our lease ended.
var errKeyLost = errors.New("our key was deleted while it waited: the session's lease ended")

// enqueue puts our key under the prefix, on our lease, unless this
// session's key is there already (then it keeps its place), and returns
// the keys older than ours as of the transaction's revision. The same
// transaction lists them, so no read comes between a holder's release and
// the next holder (concurrency.Mutex reads them after).
func (m *etcdMutex) enqueue(ctx context.Context) (older map[string]bool, at int64, err error) {
	m.key = fmt.Sprintf("%s%x", m.pfx, m.lease)
	all := clientv3.OpGet(m.pfx, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0)).
		Then(clientv3.OpPut(m.key, "", clientv3.WithLease(m.lease)), all).
		Else(all).
		Commit()
	if err != nil {
		return nil, 0, err
	}
	at = resp.Header.Revision
	kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().Kvs
	m.rev = at
	for _, kv := range kvs {
		if string(kv.Key) == m.key {
			m.rev = kv.CreateRevision
		}
	}
	older = make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if kv.CreateRevision < m.rev {
			older[string(kv.Key)] = true
		}
	}
	return older, at, nil
}

// tryLock takes the lock if no key is older than ours, else takes our key
// back out and returns ErrBusy.
func (m *etcdMutex) tryLock(ctx context.Context) error {
	older, _, err := m.enqueue(ctx)
	if err != nil || len(older) == 0 {
		return err
	}
	if _, err := m.cli.Delete(ctx, m.key); err != nil {
		return err
	}
	return ErrBusy
}

// lock queues our key and waits until every older key is deleted; if the
// wait fails, our key is taken out of the line.
func (m *etcdMutex) lock(ctx context.Context, ws *etcdshare.Watches) error {
	// Listening to the prefix's deletions before we queue: none after
	// our transaction can be missed.
	sub, err := ws.Subscribe(clientv3.WithRequireLeader(ctx), m.pfx)
	if err != nil {
		return err
	}
	defer sub.Cancel()
	older, at, err := m.enqueue(ctx)
	if err != nil {
		return err
	}
	if err := m.waitOlder(ctx, sub, older, at); err != nil {
		m.cli.Delete(context.WithoutCancel(ctx), m.key)
		return err
	}
	return nil
}

// waitOlder waits until every key in older is seen deleted after
// revision at: then ours is the oldest, and we hold the lock. Ours
// deleted meanwhile is errKeyLost.
func (m *etcdMutex) waitOlder(ctx context.Context, sub *etcdshare.Sub, older map[string]bool, at int64) error {
	for len(older) > 0 {
		evs, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if !isDeleteAfter(ev, at) {
				continue
			}
			k := string(ev.Kv.Key)
			if k == m.key {
				return errKeyLost
			}
			delete(older, k)
		}
	}
	return nil
}

// isDeleteAfter reports whether ev deletes a key after revision at.
func isDeleteAfter(ev *clientv3.Event, at int64) bool {
	return ev.Type == mvccpb.DELETE && ev.Kv.ModRevision > at
}

// unlock deletes our key if it is still ours; ErrNotHeld if it went with
// our lease.
func (m *etcdMutex) unlock(ctx context.Context) error {
	resp, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(m.key), "=", m.rev)).
		Then(clientv3.OpDelete(m.key)).
		Commit()
	switch {
	case err != nil:
		return fmt.Errorf("lock: etcd: release %s: %w", m.key, err)
	case !resp.Succeeded:
		return ErrNotHeld
	}
	return nil
}

type etcdLock struct {
	e    *Etcd
	s    *concurrency.Session
	m    *etcdMutex
	t    *line.Turn
	once sync.Once
}

var _ Tokened = (*etcdLock)(nil)

// Token is our key's create revision: the fencing token.
func (l *etcdLock) Token() int64 { return l.m.rev }

// Release deletes our key, if it is still ours (its lease may have
// expired), gives the session back and lets the next request of this
// process in.
func (l *etcdLock) Release(ctx context.Context) error {
	err := ErrNotHeld
	l.once.Do(func() {
		defer l.t.Leave()
		defer l.e.pool.Put(l.s)
		err = l.m.unlock(ctx)
	})
	return err
}
