// Package ladder puts every rung on the ladder: the lab's own (package
// lock), with the wrapper that makes each fast under load (package speed),
// and the libraries' (package libs), each with its flaw (the Ladder
// behind /strategies). New is the one table of which rung runs how.
//
// From the handler to the first Redis command, by default:
//
//	lua (in line):   critical (handlers/critical.go) -> lined.Obtain ->
//	                 lined.head (lock/speed/line.go) -> Lua.Try
//	                 (lock/rung06_lua.go): SET NX PX. 3 calls, 3 files.
//	redlock (relay): critical -> redlockLine.Obtain
//	                 (lock/speed/redlock.go) -> obtainInLine (same file)
//	                 -> Redlock.Attempt (lock/rung10_redlock.go) ->
//	                 onMasters (rung10_redlock_round.go) -> Pool.Run
//	                 (internal/workers) -> the round's call
//	                 (rung10_redlock_round.go) -> Attempt's closure: SET
//	                 NX PX on each master. 7 calls.
//
// With wait=fixed (the articles' loop) a polling rung is lined.Obtain ->
// polling.Obtain -> acquire -> its try (lock/wait.go) -> the rung's Try.
package ladder

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
	"github.com/lockladder/lockladder/lock/speed"
)

// Backends are the servers the rungs run on: Redis for most; the
// independent masters for redlock; ZooKeeper, etcd and a database for the
// rungs of the other families the articles name. A missing one (nil)
// leaves its rungs unavailable, saying which server they lack.
type Backends struct {
	Redis     redis.Cmdable
	Masters   []redis.Cmdable
	ZooKeeper *zk.Conn
	Etcd      *clientv3.Client
	DB        *sql.DB
	Postgres  *pgxpool.Pool
	// Down says why a server the process was pointed at could not be
	// reached when it started ("zookeeper", "etcd", "mariadb" to the
	// error): its rungs answer that instead of how to configure it.
	Down map[string]error
}

// pgWaits are the wait modes of the PostgreSQL rungs: notify waits for
// Redis's announcements, which a PostgreSQL lock never makes.
var pgWaits = []lock.WaitMode{lock.WaitQueue, lock.WaitFixed, lock.WaitBackoff}

// pollModes are the wait modes of the locks that poll: every Redis rung
// but redlock (which also relays) and fair (which waits for its handoff).
var pollModes = []lock.WaitMode{lock.WaitQueue, lock.WaitFixed, lock.WaitBackoff, lock.WaitNotify}

// Ladder holds one lock.Locker per rung, shared by every request of a process.
type Ladder struct {
	rungs   []lock.Info
	lockers map[string]lock.Locker
}

// New builds every rung over its back end, as o (and ro, for
// redlock) say.
func New(b Backends, o lock.Options, ro lock.RedlockOptions) *Ladder {
	rdb := b.Redis
	// The speed layer each rung runs with, in this table: inLine puts
	// a process's requests in a line in front of a rung that polls
	// (speed.Line); redlock's line, which passes or relays the lock down
	// it, is speed.RedlockLine; the cohorts' line pipes are
	// speed.NewCohort and speed.NewCohortCarry. Fair, the cohorts,
	// ZooKeeper and etcd wait their own way.
	inLine := func(l lock.Locker) lock.Locker { return speed.Line(l, o) }
	l := &Ladder{lockers: make(map[string]lock.Locker)}
	var redlock lock.Locker = lock.Unavailable{Err: lock.ErrNoMasters}
	if len(b.Masters) > 0 {
		redlock = speed.RedlockLine(lock.NewRedlock(b.Masters, o, ro))
	}
	missing := func(server, flag string) lock.Locker {
		if err := b.Down[server]; err != nil {
			return lock.Unavailable{Err: fmt.Errorf("%w: %s: %w", lock.ErrNoServer, server, err)}
		}
		return lock.Unavailable{Err: fmt.Errorf("%w: %s (start the app with %s)", lock.ErrNoServer, server, flag)}
	}
	zookeeper, etcd, dbLock := missing("zookeeper", "-zookeeper host:port"), missing("etcd", "-etcd URL"), missing("mariadb", "-mysql DSN")
	if b.ZooKeeper != nil {
		zookeeper = lock.NewZooKeeper(b.ZooKeeper, o)
	}
	if b.Etcd != nil {
		etcd = lock.NewEtcd(b.Etcd, o)
	}
	libs := libraryRungs(b, o, missing)
	if b.DB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if d, err := lock.NewDBForUpdate(ctx, b.DB, o); err != nil {
			dbLock = lock.Unavailable{Err: fmt.Errorf("%w: mariadb: %w", lock.ErrNoServer, err)}
		} else {
			dbLock = d
		}
		cancel()
	}
	pgAdvisory, pgXact, pgFenced := missing("postgres", "-postgres DSN"), missing("postgres", "-postgres DSN"), missing("postgres", "-postgres DSN")
	if b.Postgres != nil {
		pgAdvisory, pgXact, pgFenced = inLine(lock.NewPGAdvisory(b.Postgres, o)), inLine(lock.NewPGAdvisoryXact(b.Postgres, o)), inLine(lock.NewPGAdvisoryFenced(b.Postgres, o))
	}
	// db-optimistic has no lock.Locker (its store does the work), only a
	// server that may be missing.
	var noDB string
	if b.DB == nil {
		noDB = missing("mariadb", "-mysql DSN").(lock.Unavailable).Err.Error()
	}
	for _, r := range []struct {
		lock.Info
		lock.Locker
	}{
		{lock.Info{Name: "none",
			Summary: "no lock: GET, check, SET straight away",
			Flaw:    "lost updates under any concurrency"}, lock.None{}},
		{lock.Info{Name: "local", Try: true, Reenter: true,
			Summary: "an in-process lock per key, reentrant like Java's synchronized",
			Flaw:    "excludes only within one process: oversells across instances"}, lock.NewLocal(o)},
		{lock.Info{Name: "setnx", Waits: pollModes, Try: true,
			Summary: "SETNX key 1, business, DEL key",
			Flaw:    "a holder that dies never releases: every later request waits forever"}, inLine(lock.NewSetNX(rdb, o))},
		{lock.Info{Name: "setnx-expire", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX, then a separate EXPIRE",
			Flaw:    "a crash between the two commands leaves a lock with no TTL"}, inLine(lock.NewSetNXExpire(rdb, o))},
		{lock.Info{Name: "setnx-px", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key 1 NX PX ttl (sent as EX for a whole number of seconds), then a plain DEL",
			Flaw:    "business longer than the TTL: the lock lapses and A's DEL frees B's lock"}, inLine(lock.NewSetNXPX(rdb, o))},
		{lock.Info{Name: "check-del", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release = GET, compare, DEL as two commands",
			Flaw:    "the lock can pass to B between A's GET and DEL: A deletes B's lock"}, inLine(lock.NewCheckDel(rdb, o))},
		{lock.Info{Name: "lua", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release with a Lua compare-and-delete",
			Flaw:    "the lease still lapses when the business outlives the TTL"}, inLine(lock.NewLua(rdb, o))},
		{lock.Info{Name: "del-setnx", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; a waiter that finds it expired by its clock DELs it, then SETNX",
			Flaw:    "two waiters that see the same expired lock both DEL and both SETNX: two holders"}, inLine(lock.NewDelSetNX(rdb, o))},
		{lock.Info{Name: "getset", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; take an expired lock with GETSET; DEL only before own expiry",
			Flaw:    "trusts synchronised clocks; a slow holder still loses the lock"}, inLine(lock.NewGetSet(rdb, o))},
		{lock.Info{Name: "reentrant", Waits: pollModes, Try: true, Lease: true, Reenter: true,
			Summary: "hash {owner: count} in Lua scripts, a watchdog renewing every TTL/3",
			Flaw:    "a process paused longer than the TTL loses the lease, watchdog and all"}, inLine(lock.NewReentrant(rdb, o))},
		{lock.Info{Name: "redlock", Try: true, Lease: true, Waits: []lock.WaitMode{lock.WaitRelay, lock.WaitQueue, lock.WaitCohort, lock.WaitFixed, lock.WaitBackoff, lock.WaitNotify},
			Summary: "the lock on 5 independent masters; a majority within validity wins; a process's requests queue in memory behind one contender, and a section relays the lock to the next by swapping tokens on the masters (wait=relay; wait=queue: released and taken again; wait=fixed: every request contends and splits the vote)",
			Flaw:    "assumes bounded pauses and clocks: a pause past validity yields two holders"}, redlock},
		{lock.Info{Name: "fenced", Waits: pollModes, Try: true, Lease: true,
			Summary: "a lease plus a fencing token; the stock refuses a token lower than the highest seen",
			Flaw:    "none under these scenarios: a stale holder's read and write are refused; but waiters poll, and who wins is luck"}, inLine(lock.NewFenced(rdb, o))},
		{lock.Info{Name: "fair", Try: true, Lease: true,
			Summary: "fenced lease plus a FIFO queue in Redis: the release hands the lock to the next live waiter and wakes exactly it; watchdog",
			Flaw:    "none under these scenarios; the lock is still one Redis key, and every sale still pays the lock's round trips"}, lock.NewFair(rdb, o)},
		{lock.Info{Name: "cohort", Try: true, Lease: true,
			Summary: "fair's lock, passed in memory to the next request of the same process (up to 16 sections or half a lease while another instance waits, on while none does) before it goes back to Redis; a section's write goes to Redis with the next section's read; a fencing token per section",
			Flaw:    "none under these scenarios; less fair between instances: one waits up to a cohort of another"}, speed.NewCohort(rdb, o, 0)},
		{lock.Info{Name: "cohort-carry", Try: true, Lease: true,
			Summary: "cohort's lock carrying the value the last section computed: a section passed in memory reads nothing, queues its write (a fenced compare-and-set) behind the ones before it and passes the lock on before the write lands; the writes go to Redis in order, in groups",
			Flaw:    "none under these scenarios; assumes every writer takes the lock (a write from outside fails the writes queued behind it, and their requests answer an error)"}, speed.NewCohortCarry(rdb, o, 0)},
		{lock.Info{Name: "zookeeper", Try: true,
			Summary: "ZooKeeper: an ephemeral sequential znode per instance in line (its requests line up in memory); the lowest holds; each waits on its predecessor's watch",
			Flaw:    "the session is the lease: a holder paused past its session timeout loses its znode, and nothing fences it"}, zookeeper},
		{lock.Info{Name: "etcd", Try: true,
			Summary: "etcd's Mutex recipe: a key per instance in line (its requests line up in memory) on a kept-alive lease; the lowest create revision holds, and is the fencing token",
			Flaw:    "a paused holder's lease expires, as every lease; its late write is refused (fenced)"}, etcd},
		{lock.Info{Name: "db-for-update", Try: true,
			Summary: "MariaDB: BEGIN; SELECT ... FOR UPDATE on a lock row; the business; COMMIT",
			Flaw:    "as available as one database; a holder frees it only when its connection ends; no lease: a paused holder keeps it"}, dbLock},
		{lock.Info{Name: "pg-advisory", Try: true, Waits: pgWaits,
			Summary: "PostgreSQL through pgx v5: a connection from the pool, pg_try_advisory_lock(key) in the wait loop, the business, pg_advisory_unlock, the connection back",
			Flaw:    "the lock is the session's: a session cut under its holder (a pooler, a failover, a network cut) frees it at once, and the holder writes on; no lease: a paused holder keeps it"}, pgAdvisory},
		{lock.Info{Name: "pg-advisory-xact", Try: true, Waits: pgWaits,
			Summary: "PostgreSQL through pgx v5: BEGIN; pg_try_advisory_xact_lock(key) in the wait loop; the business; COMMIT releases it",
			Flaw:    "as pg-advisory: a cut session aborts the transaction and frees the lock; the holder learns at COMMIT, after its Redis writes"}, pgXact},
		{lock.Info{Name: "pg-advisory-fenced", Try: true, Waits: pgWaits,
			Summary: "pg-advisory plus a fencing token drawn on the holder's session (nextval of a sequence); the stock refuses a token lower than the highest seen",
			Flaw:    "none under these scenarios: a cut holder's late write carries the lower token and is refused; still as available as one database"}, pgFenced},
		// The libraries, called as their READMEs show (lib_*.go).
		{lock.Info{Name: "redsync", Try: true, Lease: true,
			Summary: "go-redsync/redsync v4.18.1 as its README shows: NewMutex(key, WithExpiry(lease)), Lock, business, Unlock, on the lab's Redis; every request retries on its own every 50-250ms (its default) until its bound",
			Flaw:    "no renewal unless the caller calls Extend: a business or a pause past the lease lets another in, and Unlock then fails (lock already expired, or taken)"}, libs.redsync},
		{lock.Info{Name: "redsync-redlock", Try: true, Lease: true,
			Summary: "the same redsync Mutex over the 5 independent masters (a pool each): a majority within validity wins, else it releases what it won and retries after 50-250ms",
			Flaw:    "no renewal: a business or a pause past the lease yields two holders; 3 of 5 masters restarted empty grant the lock again"}, libs.redlock},
		{lock.Info{Name: "redislock", Try: true, Lease: true,
			Summary: "bsm/redislock v0.9.4 as its README shows: Obtain(ctx, key, lease, RetryStrategy LinearBackoff(10ms)) until the request's bound, business, Release",
			Flaw:    "no renewal: a business or a pause past the lease lets another in; Release then returns ErrLockNotHeld"}, libs.redislock},
		{lock.Info{Name: "redislock-refresh", Try: true, Lease: true,
			Summary: "redislock plus Refresh(lease) every lease/3 while the business runs, as its README suggests (a goroutine from Obtain to Release)",
			Flaw:    "a process paused past the lease refreshes nothing, then writes: two holders"}, libs.redislockRefresh},
		{lock.Info{Name: "etcd-mutex", Try: true,
			Summary: "etcd client v3.7.3's concurrency.Mutex as shipped: a Session per acquisition (its lease the lock's TTL, kept alive), NewMutex, Lock, business, Unlock, Close; the write carries no fencing token",
			Flaw:    "a holder paused past its session's lease loses its key, the next enters, and the paused one's late write lands: the etcd rung's fencing token is the fix"}, libs.etcdMutex},
		{lock.Info{Name: "zk-lock", Try: true,
			Summary: "go-zookeeper/zk v1.0.4's Lock as shipped: NewLock(conn, path, AuthACL: the znodes its credentials' alone), Lock, business, Unlock, on the process's session (its timeout the lease); Lock takes no context: the request stops waiting at its bound, and a Lock that gets the lock after that unlocks it at once",
			Flaw:    "a holder paused past its session loses its znode and writes anyway (no fence); a waiter that gave up keeps its place in line until its turn"}, libs.zkLock},
		{lock.Info{Name: "rueidislock", Try: true,
			Summary: "redis/rueidis v1.0.79's rueidislock as its README shows: NewLocker (KeyMajority 1, the lease its KeyValidity, extended every half of it), WithContext(ctx, key) until the request's bound, the business checks the returned context before its write, cancel releases; with its README's DisableCache (with client-side caching on, the library loses a waiter's wake-up when an attempt's reply comes late), so a waiter tries again every 20ms and a lost key is learnt at the next extension",
			Flaw:    "a process frozen past the lease freezes the extension and the check with it, and on waking writes before it learns the lock is gone"}, libs.rueidislock},
		{lock.Info{Name: "db-optimistic", Atomic: true, Store: lock.StoreMariaDB, Unavailable: noDB, Waits: []lock.WaitMode{lock.WaitQueue, lock.WaitBackoff},
			Summary: "no lock: the stock row carries a version; UPDATE ... WHERE version = ? retried when another write got there first; a process's writers line up in memory (wait=queue), or each retries on its own (wait=backoff)",
			Flaw:    "under contention most tries lose and retry: cost, not safety (wait=backoff: a hundred writers mostly lose, and some lose every try)"}, nil},
		{lock.Info{Name: "atomic",
			Summary: "no lock: one Lua script checks and decrements (or increments)",
			Flaw:    "none, but only when the whole operation fits in one script",
			Atomic:  true}, nil},
	} {
		if u, ok := r.Locker.(lock.Unavailable); ok {
			r.Info.Unavailable = u.Err.Error()
		}
		l.rungs = append(l.rungs, r.Info)
		l.lockers[r.Name] = r.Locker
	}
	return l
}

// Rungs lists every rung in ladder order.
func (l *Ladder) Rungs() []lock.Info { return append([]lock.Info(nil), l.rungs...) }

// Names lists every rung's name in ladder order.
func (l *Ladder) Names() []string {
	names := make([]string, len(l.rungs))
	for i, r := range l.rungs {
		names[i] = r.Name
	}
	return names
}

// Lookup returns the rung called name and its lock.Locker (nil for the atomic
// ceiling), or false when there is no such rung.
func (l *Ladder) Lookup(name string) (lock.Info, lock.Locker, bool) {
	for _, r := range l.rungs {
		if r.Name == name {
			return r, l.lockers[name], true
		}
	}
	return lock.Info{}, nil, false
}

// between Obtain and Release, and a lock.Lock that fences nothing writes
// without a token.

// libraryLockers are the library rungs' Lockers in a ladder.
type libraryLockers struct {
	redsync, redlock, redislock, redislockRefresh, etcdMutex, zkLock, rueidislock lock.Locker
}

// libraryRungs builds the library rungs over b's servers; a missing one
// leaves its rungs unavailable, as missing says (NewLadder's).
func libraryRungs(b Backends, o lock.Options, missing func(server, flag string) lock.Locker) libraryLockers {
	noRedis := lock.Unavailable{Err: fmt.Errorf("%w: redis", lock.ErrNoServer)}
	l := libraryLockers{
		redsync: noRedis, redlock: lock.Unavailable{Err: lock.ErrNoMasters}, redislock: noRedis, redislockRefresh: noRedis, rueidislock: noRedis,
		etcdMutex: missing("etcd", "-etcd URL"), zkLock: missing("zookeeper", "-zookeeper host:port"),
	}
	if b.Redis != nil {
		l.redislock, l.redislockRefresh = libs.NewRedislock(b.Redis, o), libs.NewRedislockRefresh(b.Redis, o)
		if opt, err := libs.RueidisOption(b.Redis); err == nil {
			l.rueidislock = libs.NewRueidislock(opt, o)
		} else {
			l.rueidislock = lock.Unavailable{Err: err}
		}
		if u, ok := b.Redis.(redis.UniversalClient); ok {
			l.redsync = libs.NewRedsync([]redis.UniversalClient{u}, o)
		} else {
			l.redsync = lock.Unavailable{Err: fmt.Errorf("%w: redsync needs a go-redis client, not a %T", lock.ErrNoServer, b.Redis)}
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
			l.redlock = libs.NewRedsync(masters, o)
		} else {
			l.redlock = lock.Unavailable{Err: fmt.Errorf("%w: redsync needs go-redis clients for the masters", lock.ErrNoServer)}
		}
	}
	if b.Etcd != nil {
		l.etcdMutex = libs.NewEtcdMutex(b.Etcd, o)
	}
	if b.ZooKeeper != nil {
		l.zkLock = libs.NewZKLock(b.ZooKeeper, o)
	}
	return l
}
