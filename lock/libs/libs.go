// Package libs holds the library rungs: the Go lock libraries the lab is
// asked about, called as their READMEs show, on the same ladder and under
// the same scenarios as the lab's own rungs (docs/libraries.md has their
// verdicts). One file per library, as redsync keeps one package per
// client:
//
//	redsync.go           go-redsync/redsync v4: redsync (one Redis) and
//	                     redsync-redlock (the 5 masters); no renewal
//	redislock.go         bsm/redislock: redislock; no renewal
//	redislock_refresh.go redislock-refresh: plus Refresh every lease/3;
//	                     not against pauses
//	etcd_mutex.go        etcd's concurrency.Mutex, unfenced: etcd-mutex
//	zk_lock.go           go-zookeeper/zk's Lock, unfenced, no context: zk-lock
//	rueidislock.go       redis/rueidis's rueidislock: a context cancelled
//	                     when the lock is lost, checked before the write;
//	                     not against pauses
//
// Each implements only lock.Locker and lock.Lock: the handler runs the
// business between Obtain and Release, and a Lock that fences nothing
// writes without a token. Package ladder puts them on the ladder.
package libs
