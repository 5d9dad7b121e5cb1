package lock

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The library rungs: the Go lock libraries the lab is asked about,
// called as their READMEs show, on the same ladder and under the same
// scenarios as the lab's own rungs (docs/libraries.md has their verdicts):
//
//	lib_redsync.go          go-redsync/redsync v4: redsync (one Redis) and
//	                        redsync-redlock (the 5 masters); no renewal
//	lib_redislock.go        bsm/redislock: redislock; no renewal
//	lib_redislock_refresh.go redislock-refresh: plus Refresh every lease/3;
//	                        not against pauses
//	lib_etcd_mutex.go       etcd's concurrency.Mutex, unfenced: etcd-mutex
//	lib_zk_lock.go          go-zookeeper/zk's Lock, unfenced, no context: zk-lock
//	lib_rueidislock.go      redis/rueidis's rueidislock: a context cancelled
//	                        when the lock is lost, checked before the write;
//	                        not against pauses
//
// Each implements only Locker and Lock: the handler runs the business
// between Obtain and Release, and a Lock that fences nothing writes
// without a token.

// libraryLockers are the library rungs' Lockers in a ladder.
type libraryLockers struct {
	redsync, redlock, redislock, redislockRefresh, etcdMutex, zkLock, rueidislock Locker
}

// libraryRungs builds the library rungs over b's servers; a missing one
// leaves its rungs unavailable, as missing says (NewLadder's).
func libraryRungs(b Backends, o Options, missing func(server, flag string) Locker) libraryLockers {
	noRedis := unavailable{fmt.Errorf("%w: redis", ErrNoServer)}
	l := libraryLockers{
		redsync: noRedis, redlock: unavailable{ErrNoMasters}, redislock: noRedis, redislockRefresh: noRedis, rueidislock: noRedis,
		etcdMutex: missing("etcd", "-etcd URL"), zkLock: missing("zookeeper", "-zookeeper host:port"),
	}
	if b.Redis != nil {
		l.redislock, l.redislockRefresh = NewRedislock(b.Redis, o), NewRedislockRefresh(b.Redis, o)
		if opt, err := RueidisOption(b.Redis); err == nil {
			l.rueidislock = NewRueidislock(opt, o)
		} else {
			l.rueidislock = unavailable{err}
		}
		if u, ok := b.Redis.(redis.UniversalClient); ok {
			l.redsync = NewRedsync([]redis.UniversalClient{u}, o)
		} else {
			l.redsync = unavailable{fmt.Errorf("%w: redsync needs a go-redis client, not a %T", ErrNoServer, b.Redis)}
		}
	}
	if len(b.Masters) > 0 {
		masters := make([]redis.UniversalClient, 0, len(b.Masters))
		for _, m := range b.Masters {
			if u, ok := m.(redis.UniversalClient); ok {
				masters = append(masters, u)
			}
		}
		if len(masters) == len(b.Masters) {
			l.redlock = NewRedsync(masters, o)
		} else {
			l.redlock = unavailable{fmt.Errorf("%w: redsync needs go-redis clients for the masters", ErrNoServer)}
		}
	}
	if b.Etcd != nil {
		l.etcdMutex = NewEtcdMutex(b.Etcd, o)
	}
	if b.ZooKeeper != nil {
		l.zkLock = NewZKLock(b.ZooKeeper, o)
	}
	return l
}
