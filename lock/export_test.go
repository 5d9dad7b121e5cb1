package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdWatches is the etcd rung's watch per lock, kept open (rung 15).
type EtcdWatches = etcdWatches

// NewEtcdWatches returns the watches of a process on cli, each closed once
// nobody has listened to it for idle.
func NewEtcdWatches(cli *clientv3.Client, idle time.Duration) *EtcdWatches {
	return &etcdWatches{cli: cli, idle: idle}
}

// Subscribe listens to pfx's deletions.
func (ws *etcdWatches) Subscribe(ctx context.Context, pfx string) (*watchSub, error) {
	return ws.subscribe(ctx, pfx)
}

// Open counts the watches open.
func (ws *etcdWatches) Open() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.all)
}

// End ends pfx's watch as etcd would cancel it.
func (ws *etcdWatches) End(pfx string) {
	ws.mu.Lock()
	pw := ws.all[pfx]
	ws.mu.Unlock()
	pw.cancel()
}

func (s *watchSub) Next(ctx context.Context) ([]*clientv3.Event, error) { return s.next(ctx) }
func (s *watchSub) Cancel()                                             { s.cancel() }

// Hooks into rungs 9, 10 and 12 for the black-box tests in package lock_test.

// WatchdogDone returns the channel closed when the watchdog of a Reentrant
// acquisition has returned, or nil when it has none.
func WatchdogDone(l Lock) <-chan struct{} {
	if wd := l.(*reentrantLock).wd; wd != nil {
		return wd.done
	}
	return nil
}

// StopWatchdog stops renewing a Reentrant acquisition's lease, as if its
// process were paused (and never woke to renew again): the flaw rung 9
// still shows. The acquisition itself still believes it holds the lock.
func StopWatchdog(l Lock) { l.(*reentrantLock).wd.stop() }

// Watchdogs counts the watchdogs a NewReentrant Locker keeps running.
func Watchdogs(l Locker) int {
	r := l.(*polling).r.(*Reentrant)
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.watchdogs)
}

// FairWatchdogDone returns the channel closed when the watchdog of a Fair
// acquisition has returned.
func FairWatchdogDone(l Lock) <-chan struct{} { return l.(*fairLock).wd.done }

// HasWatchdog reports whether a Reentrant or Fair acquisition renews its
// lease (an explicit lease runs without).
func HasWatchdog(l Lock) bool {
	switch l := l.(type) {
	case *reentrantLock:
		return l.wd != nil
	case *fairLock:
		return l.wd != nil
	}
	return false
}

// RevokeEtcdLease revokes the lease of an Etcd acquisition's session, as
// its expiry would.
func RevokeEtcdLease(t interface{ Fatal(...any) }, l Lock) {
	el := l.(*etcdLock)
	if _, err := el.e.cli.Revoke(context.Background(), el.s.Lease()); err != nil {
		t.Fatal(err)
	}
}

// Swap runs the relay's script on one master: the chain id's token of
// sequence seq replaces any earlier one of the chain.
func Swap(ctx context.Context, rdb redis.Cmdable, key, id string, seq int) (bool, error) {
	n, err := luaSwap.Run(ctx, rdb, []string{key}, id, seq, fmt.Sprintf("%s#%d", id, seq), 10000).Int64()
	return n == 1, err
}

// ChainRelease runs the chain's release on one master, up to seq.
func ChainRelease(ctx context.Context, rdb redis.Cmdable, key, id string, seq int) (bool, error) {
	return chainReleaser(key, id, seq)(ctx, rdb)
}
