package lock

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdMutex is concurrency.Mutex's recipe on the same keys (the lock's
// prefix, then the session's lease in hex), for one acquisition: the
// oldest key under the prefix holds the lock. It waits differently (see
// Etcd): it listens to the prefix's deletions from before it queues, on
// the watch its process keeps open (etcdWatches), and the transaction
// that puts its key also lists the older ones; it holds the lock once it
// has heard each of them deleted, with no read between a holder's
// release and the next holder.
type etcdMutex struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	pfx   string // the lock's prefix, ending in "/"
	key   string // ours
	rev   int64  // our key's create revision: our place in line, and the fencing token
}

// errKeyLost: our key was deleted while we waited: our lease ended.
var errKeyLost = errors.New("our key was deleted while it waited: the session's lease ended")

// enqueue puts our key under the prefix and returns the keys older than
// it, as of the transaction's revision. A key this session left there
// keeps its place.
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
func (m *etcdMutex) lock(ctx context.Context, ws *etcdWatches) error {
	// Subscribed before we queue: no deletion after our transaction can
	// be missed.
	sub, err := ws.subscribe(clientv3.WithRequireLeader(ctx), m.pfx)
	if err != nil {
		return err
	}
	defer sub.cancel()
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
// revision at; ours deleted meanwhile is errKeyLost.
func (m *etcdMutex) waitOlder(ctx context.Context, sub *watchSub, older map[string]bool, at int64) error {
	for len(older) > 0 {
		evs, err := sub.next(ctx)
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
