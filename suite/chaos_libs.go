package suite

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// The library rungs (LibraryLocks) and the PostgreSQL rungs (PGLocks)
// under the fault suite. Each meets the faults that strike the back end
// its lock lives on, as the lab's rungs on that back end do:
//
//   - kill and drain (faults 1, 2 and 7): every one. The app instance
//     holding the lock dies or leaves; what frees an orphan is the lock's
//     lease: a Redis key's expiry (redsync, redislock, rueidislock, on
//     the masters for redsync-redlock), an etcd session's TTL
//     (etcd-mutex), a ZooKeeper session (zk-lock), or a PostgreSQL
//     session, which the server ends when the killed process's socket
//     closes (the pg-advisory rungs).
//   - redis-stop (3 and 7): the rungs on the one Redis (redsync,
//     redislock, redislock-refresh, rueidislock); postgres-stop (3 and
//     7): the PostgreSQL rungs. The Sentinel failover (5) and the
//     cluster failover (8): redsync, redislock and redislock-refresh.
//     Fault 5 runs them as it runs lua: two clients of their own through
//     package failover, not under load. The masters, etcd and ZooKeeper
//     stopped or crashed are the matrix's masters-down, majority-crash
//     and backend-restart.
//   - partition (6 and 7): redsync-redlock, over the masters as redlock.
//   - the retry trap (4): none, as for the lab's locks: it is about the
//     sale's script, run on atomic.
//   - redsync-redlock under fault 5: not run. Package failover's trials
//     over the masters are redlock's own; redsync-redlock's majority
//     crash is in the matrix.
//   - rueidislock under faults 5 and 8: not run. Package failover drives
//     go-redis clients through Sentinel, and the rung's client is
//     rueidis's own, which the app points at the one Redis only.
//
// The expectation beside each is the lab's (the fault's Want): the ladder
// (../shared/ladder.md) expects every library SAFE under a crash and
// unaffected by faults that pause no holder, and none of the suite's
// faults pauses a holder or runs a business past its lease. Fault 5 is
// the exception: it is built to lose the key, and each library's want is
// lua's, a double grant shown (failoverWant). Where a lock's own lease
// differs from the Redis key's the bound follows it (orphanBound).

// ownBackEnd is the back end each library rung's and PostgreSQL rung's
// lock lives on; the lab's other rungs of ChaosConfig.Locks are its safe
// rungs on Redis, loaded under every fault that strikes Redis.
var ownBackEnd = map[string]string{
	"redsync": "redis", "redislock": "redis", "redislock-refresh": "redis",
	"redsync-redlock": "masters", "etcd-mutex": "etcd", "zk-lock": "zookeeper",
	// rueidislock's own client on the one Redis: stopped, as the
	// others'; not failed over (see above).
	"rueidislock": "redis-rueidis",
	"pg-advisory": "postgres", "pg-advisory-xact": "postgres", "pg-advisory-fenced": "postgres",
}

// faultBackEnds are the back ends each fault, by its schedule's name,
// strikes: the rungs of ownBackEnd on them run it.
var faultBackEnds = map[string][]string{
	"kill":             {"redis", "masters", "etcd", "zookeeper", "redis-rueidis", "postgres"},
	"drain":            {"redis", "masters", "etcd", "zookeeper", "redis-rueidis", "postgres"},
	"redis-stop":       {"redis", "redis-rueidis"},
	"postgres-stop":    {"postgres"},
	"partition":        {"masters"},
	"cluster failover": {"redis"},
	"failover":         {"redis"},
}

// hasOwnBackEnd reports whether lock is a rung of ownBackEnd.
func hasOwnBackEnd(lock string) bool {
	_, ok := ownBackEnd[lock]
	return ok
}

// safeLocks are the lab's rungs of cfg.Locks, the first n of them when n > 0.
func (c *chaos) safeLocks(n int) []string {
	var out []string
	for _, l := range c.cfg.Locks {
		if !hasOwnBackEnd(l) && (n <= 0 || len(out) < n) {
			out = append(out, l)
		}
	}
	return out
}

// libraries are the rungs of cfg.Locks with a back end of their own
// (ownBackEnd) that fault strikes, in the order given.
func (c *chaos) libraries(fault string) []string {
	var out []string
	for _, l := range c.cfg.Locks {
		if be, ok := ownBackEnd[l]; ok && slices.Contains(faultBackEnds[fault], be) {
			out = append(out, l)
		}
	}
	return out
}

// locksFor are the locks fault loads: the lab's safe rungs of cfg.Locks
// where it strikes Redis, then the rungs with a back end of their own it
// strikes.
func (c *chaos) locksFor(fault string) []string {
	if !slices.Contains(faultBackEnds[fault], "redis") {
		return c.libraries(fault)
	}
	return append(c.safeLocks(0), c.libraries(fault)...)
}

// serverOf names the server other than Redis a lock needs ("" for none).
func serverOf(lock string) string {
	switch lock {
	case "etcd", "etcd-mutex":
		return "etcd"
	case "zookeeper", "zk-lock":
		return "zookeeper"
	case "pg-advisory", "pg-advisory-xact", "pg-advisory-fenced":
		return "postgres"
	}
	return ""
}

// withServers has cfg start the servers that locks need (etcd, ZooKeeper)
// as the template says, Auto where it says nothing: the fault stacks
// start none otherwise, so that a Redis fault starts no JVM.
func withServers(cfg stack.Config, tmpl stack.Config, locks []string) stack.Config {
	mode := func(m stack.Mode) stack.Mode {
		if m == "" {
			return stack.Auto
		}
		return m
	}
	for _, l := range locks {
		switch serverOf(l) {
		case "etcd":
			cfg.Etcd = mode(tmpl.Etcd)
		case "zookeeper":
			cfg.ZooKeeper = mode(tmpl.ZooKeeper)
		case "postgres":
			cfg.Postgres = mode(tmpl.Postgres)
		}
	}
	return cfg
}

// missingServer says why lock cannot run on top ("" when it can): the
// server it needs was not installed, and the stack left it out.
func missingServer(top Stack, lock string) string {
	need := serverOf(lock)
	bc, ok := top.(backendControl)
	if need == "" || !ok || slices.Contains(bc.Backends(), need) {
		return ""
	}
	return "needs " + need + ": " + stack.Install(need)
}

// orphanBound is how soon after its holder's SIGKILL a lock must be had
// again, and why: its lease, and the time the lab allows beyond it (half
// a second: the waiters' next try, the write that follows).
func orphanBound(lock string) (time.Duration, string) {
	const beyond = 500 * time.Millisecond
	switch serverOf(lock) {
	case "etcd":
		// The session's lease is the lab's, 2s (etcd's floor on a default
		// server too); the last keep-alive may have renewed it just
		// before the kill, and etcd revokes an expired lease at its next
		// check, every 500ms.
		return chaosLockTTL + etcdLeaseCheck + beyond, fmt.Sprintf("its %s session, revoked at etcd's next %s check", chaosLockTTL, etcdLeaseCheck)
	case "zookeeper":
		// The session timeout is the lab's lease; ZooKeeper expires
		// sessions in buckets of its tick (500ms in the stack's server),
		// counted from the client's last ping.
		return chaosLockTTL + zkTick + beyond, fmt.Sprintf("its %s session, expired in ZooKeeper's %s ticks", chaosLockTTL, zkTick)
	case "postgres":
		// No lease: the killed process's socket closes, and the server
		// ends its session, and frees its lock, at once.
		return beyond, "its session, ended by the server when the killed process's socket closes"
	}
	return chaosLockTTL + beyond, fmt.Sprintf("its %s lease", chaosLockTTL)
}

// etcdLeaseCheck and zkTick are how often etcd looks for expired leases
// and the stack's ZooKeeper's tickTime.
const (
	etcdLeaseCheck = 500 * time.Millisecond
	zkTick         = 500 * time.Millisecond
)

// waitsOutOutages are the library rungs whose wait tries again after an
// attempt that failed (Redis down) as after one that lost, until the
// request's bound: redsync, and rueidislock (its WithContext tries again
// after any failed attempt, every 20ms with DisableCache). Under
// redis-stop their requests wait the outage out, where the lab's rungs
// and redislock answer a fast 503 (rueidislock: 0 and 1 503 in two runs).
var waitsOutOutages = map[string]bool{"redsync": true, "redsync-redlock": true, "rueidislock": true}

// waitsForEveryMaster are the rungs over the masters whose attempt waits
// for every master's answer: redsync's does unless WithFailFast, and its
// own per-master timeout (the expiry times 0.05) is a context deadline
// that go-redis leaves to its read timeout unless ContextTimeoutEnabled.
// A master cut off the network (bytes dropped: neither refused nor
// closed) holds every attempt for masterReadTimeout, past the partition's
// wait, so a request makes one attempt, and the contenders split the
// masters that answer: the rung nearly stops selling with one master cut.
var waitsForEveryMaster = map[string]bool{"redsync-redlock": true}

// masterReadTimeout is the app's -redis-timeout, every master client's
// read timeout.
const masterReadTimeout = time.Second
