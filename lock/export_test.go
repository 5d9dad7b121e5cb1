package lock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

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
