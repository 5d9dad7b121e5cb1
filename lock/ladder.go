package lock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Info describes one rung of the ladder, for /strategies and reports.
type Info struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Flaw    string `json:"flaw"`
	// Waits are the wait modes (wait=) the rung honours, its default
	// first; none for a rung that never waits on a busy lock, or (fair)
	// waits only its own way.
	Waits []WaitMode `json:"waits,omitempty"`
	// Try says the rung takes Call.Try (it can wait for a busy lock);
	// Lease says it takes Call.Lease (its lock has a lease to set).
	Try   bool `json:"try,omitempty"`
	Lease bool `json:"lease,omitempty"`
	// Reenter says the rung lets the owner that holds a lock take it
	// again (Call.Owner): the articles' testReEnter. Any other rung would
	// wait for itself, holding the lock, until its wait bound.
	Reenter bool `json:"reenter,omitempty"`
	// Atomic marks a rung with no lock at all: its store does the whole
	// operation (the ceiling: one Lua script in Redis; db-optimistic: a
	// version check in the database). Its Locker is nil.
	Atomic bool `json:"atomic,omitempty"`
	// Store is where the rung's stock and counters live: "" for Redis,
	// "mariadb" for db-optimistic. GET /stock?lock=NAME reads them there.
	Store string `json:"store,omitempty"`
	// Unavailable, when set, says why this process cannot serve the rung:
	// the server it needs is missing. Its requests answer 503 with it.
	Unavailable string `json:"unavailable,omitempty"`
}

// StoreMariaDB is the Info.Store of a rung whose stock lives in MariaDB.
const StoreMariaDB = "mariadb"

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

// Ladder holds one Locker per rung, shared by every request of a process.
type Ladder struct {
	rungs   []Info
	lockers map[string]Locker
}

// ErrNoServer is what a rung answers when the server it needs is missing.
var ErrNoServer = errors.New("lock: the server this lock needs is not running")

// ErrNoMasters is what redlock answers when the process was given no
// independent masters.
var ErrNoMasters = fmt.Errorf("%w: redlock needs independent masters (start the app with -masters a,b,c,d,e)", ErrNoServer)

// NewLadder builds every rung over its back end, as o (and ro, for
// redlock) say.
func NewLadder(b Backends, o Options, ro RedlockOptions) *Ladder {
	rdb := b.Redis
	l := &Ladder{lockers: make(map[string]Locker)}
	var redlock Locker = unavailable{ErrNoMasters}
	if len(b.Masters) > 0 {
		redlock = NewRedlock(b.Masters, o, ro)
	}
	missing := func(server, flag string) Locker {
		if err := b.Down[server]; err != nil {
			return unavailable{fmt.Errorf("%w: %s: %w", ErrNoServer, server, err)}
		}
		return unavailable{fmt.Errorf("%w: %s (start the app with %s)", ErrNoServer, server, flag)}
	}
	zookeeper, etcd, dbLock := missing("zookeeper", "-zookeeper host:port"), missing("etcd", "-etcd URL"), missing("mariadb", "-mysql DSN")
	if b.ZooKeeper != nil {
		zookeeper = NewZooKeeper(b.ZooKeeper, o)
	}
	if b.Etcd != nil {
		etcd = NewEtcd(b.Etcd, o)
	}
	libs := libraryRungs(b, o, missing)
	if b.DB != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if d, err := NewDBForUpdate(ctx, b.DB, o); err != nil {
			dbLock = unavailable{fmt.Errorf("%w: mariadb: %w", ErrNoServer, err)}
		} else {
			dbLock = d
		}
		cancel()
	}
	pgAdvisory, pgXact, pgFenced := missing("postgres", "-postgres DSN"), missing("postgres", "-postgres DSN"), missing("postgres", "-postgres DSN")
	if b.Postgres != nil {
		pgAdvisory, pgXact, pgFenced = NewPGAdvisory(b.Postgres, o), NewPGAdvisoryXact(b.Postgres, o), NewPGAdvisoryFenced(b.Postgres, o)
	}
	// db-optimistic has no Locker (its store does the work), only a
	// server that may be missing.
	var noDB string
	if b.DB == nil {
		noDB = missing("mariadb", "-mysql DSN").(unavailable).err.Error()
	}
	for _, r := range []struct {
		Info
		Locker
	}{
		{Info{Name: "none",
			Summary: "no lock: GET, check, SET straight away",
			Flaw:    "lost updates under any concurrency"}, None{}},
		{Info{Name: "local", Try: true, Reenter: true,
			Summary: "an in-process lock per key, reentrant like Java's synchronized",
			Flaw:    "excludes only within one process: oversells across instances"}, NewLocal(o)},
		{Info{Name: "setnx", Waits: pollModes, Try: true,
			Summary: "SETNX key 1, business, DEL key",
			Flaw:    "a holder that dies never releases: every later request waits forever"}, NewSetNX(rdb, o)},
		{Info{Name: "setnx-expire", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX, then a separate EXPIRE",
			Flaw:    "a crash between the two commands leaves a lock with no TTL"}, NewSetNXExpire(rdb, o)},
		{Info{Name: "setnx-px", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key 1 NX PX ttl (sent as EX for a whole number of seconds), then a plain DEL",
			Flaw:    "business longer than the TTL: the lock lapses and A's DEL frees B's lock"}, NewSetNXPX(rdb, o)},
		{Info{Name: "check-del", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release = GET, compare, DEL as two commands",
			Flaw:    "the lock can pass to B between A's GET and DEL: A deletes B's lock"}, NewCheckDel(rdb, o)},
		{Info{Name: "lua", Waits: pollModes, Try: true, Lease: true,
			Summary: "SET key uuid NX PX ttl; release with a Lua compare-and-delete",
			Flaw:    "the lease still lapses when the business outlives the TTL"}, NewLua(rdb, o)},
		{Info{Name: "del-setnx", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; a waiter that finds it expired by its clock DELs it, then SETNX",
			Flaw:    "two waiters that see the same expired lock both DEL and both SETNX: two holders"}, NewDelSetNX(rdb, o)},
		{Info{Name: "getset", Waits: pollModes, Try: true, Lease: true,
			Summary: "SETNX key expiry; take an expired lock with GETSET; DEL only before own expiry",
			Flaw:    "trusts synchronised clocks; a slow holder still loses the lock"}, NewGetSet(rdb, o)},
		{Info{Name: "reentrant", Waits: pollModes, Try: true, Lease: true, Reenter: true,
			Summary: "hash {owner: count} in Lua scripts, a watchdog renewing every TTL/3",
			Flaw:    "a process paused longer than the TTL loses the lease, watchdog and all"}, NewReentrant(rdb, o)},
		{Info{Name: "redlock", Try: true, Lease: true, Waits: []WaitMode{WaitRelay, WaitQueue, WaitCohort, WaitFixed, WaitBackoff, WaitNotify},
			Summary: "the lock on 5 independent masters; a majority within validity wins; a process's requests queue in memory behind one contender, and a section relays the lock to the next by swapping tokens on the masters (wait=relay; wait=queue: released and taken again; wait=fixed: every request contends and splits the vote)",
			Flaw:    "assumes bounded pauses and clocks: a pause past validity yields two holders"}, redlock},
		{Info{Name: "fenced", Waits: pollModes, Try: true, Lease: true,
			Summary: "a lease plus a fencing token; the stock refuses a token lower than the highest seen",
			Flaw:    "none under these scenarios: a stale holder's read and write are refused; but waiters poll, and who wins is luck"}, NewFenced(rdb, o)},
		{Info{Name: "fair", Try: true, Lease: true,
			Summary: "fenced lease plus a FIFO queue in Redis: the release hands the lock to the next live waiter and wakes exactly it; watchdog",
			Flaw:    "none under these scenarios; the lock is still one Redis key, and every sale still pays the lock's round trips"}, NewFair(rdb, o)},
		{Info{Name: "cohort", Try: true, Lease: true,
			Summary: "fair's lock, passed in memory to the next request of the same process (up to 16 sections or half a lease while another instance waits, on while none does) before it goes back to Redis; a section's write goes to Redis with the next section's read; a fencing token per section",
			Flaw:    "none under these scenarios; less fair between instances: one waits up to a cohort of another"}, NewCohort(rdb, o, 0)},
		{Info{Name: "cohort-carry", Try: true, Lease: true,
			Summary: "cohort's lock carrying the value the last section computed: a section passed in memory reads nothing, queues its write (a fenced compare-and-set) behind the ones before it and passes the lock on before the write lands; the writes go to Redis in order, in groups",
			Flaw:    "none under these scenarios; assumes every writer takes the lock (a write from outside fails the writes queued behind it, and their requests answer an error)"}, NewCohortCarry(rdb, o, 0)},
		{Info{Name: "zookeeper", Try: true,
			Summary: "ZooKeeper: an ephemeral sequential znode per instance in line (its requests line up in memory); the lowest holds; each waits on its predecessor's watch",
			Flaw:    "the session is the lease: a holder paused past its session timeout loses its znode, and nothing fences it"}, zookeeper},
		{Info{Name: "etcd", Try: true,
			Summary: "etcd's Mutex recipe: a key per instance in line (its requests line up in memory) on a kept-alive lease; the lowest create revision holds, and is the fencing token",
			Flaw:    "a paused holder's lease expires, as every lease; its late write is refused (fenced)"}, etcd},
		{Info{Name: "db-for-update", Try: true,
			Summary: "MariaDB: BEGIN; SELECT ... FOR UPDATE on a lock row; the business; COMMIT",
			Flaw:    "as available as one database; a holder frees it only when its connection ends; no lease: a paused holder keeps it"}, dbLock},
		{Info{Name: "pg-advisory", Try: true, Waits: pgWaits,
			Summary: "PostgreSQL through pgx v5: a connection from the pool, pg_try_advisory_lock(key) in the wait loop, the business, pg_advisory_unlock, the connection back",
			Flaw:    "the lock is the session's: a session cut under its holder (a pooler, a failover, a network cut) frees it at once, and the holder writes on; no lease: a paused holder keeps it"}, pgAdvisory},
		{Info{Name: "pg-advisory-xact", Try: true, Waits: pgWaits,
			Summary: "PostgreSQL through pgx v5: BEGIN; pg_try_advisory_xact_lock(key) in the wait loop; the business; COMMIT releases it",
			Flaw:    "as pg-advisory: a cut session aborts the transaction and frees the lock; the holder learns at COMMIT, after its Redis writes"}, pgXact},
		{Info{Name: "pg-advisory-fenced", Try: true, Waits: pgWaits,
			Summary: "pg-advisory plus a fencing token drawn on the holder's session (nextval of a sequence); the stock refuses a token lower than the highest seen",
			Flaw:    "none under these scenarios: a cut holder's late write carries the lower token and is refused; still as available as one database"}, pgFenced},
		// The libraries, called as their READMEs show (lib_*.go).
		{Info{Name: "redsync", Try: true, Lease: true,
			Summary: "go-redsync/redsync v4.18.1 as its README shows: NewMutex(key, WithExpiry(lease)), Lock, business, Unlock, on the lab's Redis; every request retries on its own every 50-250ms (its default) until its bound",
			Flaw:    "no renewal unless the caller calls Extend: a business or a pause past the lease lets another in, and Unlock then fails (lock already expired, or taken)"}, libs.redsync},
		{Info{Name: "redsync-redlock", Try: true, Lease: true,
			Summary: "the same redsync Mutex over the 5 independent masters (a pool each): a majority within validity wins, else it releases what it won and retries after 50-250ms",
			Flaw:    "no renewal: a business or a pause past the lease yields two holders; 3 of 5 masters restarted empty grant the lock again"}, libs.redlock},
		{Info{Name: "redislock", Try: true, Lease: true,
			Summary: "bsm/redislock v0.9.4 as its README shows: Obtain(ctx, key, lease, RetryStrategy LinearBackoff(10ms)) until the request's bound, business, Release",
			Flaw:    "no renewal: a business or a pause past the lease lets another in; Release then returns ErrLockNotHeld"}, libs.redislock},
		{Info{Name: "redislock-refresh", Try: true, Lease: true,
			Summary: "redislock plus Refresh(lease) every lease/3 while the business runs, as its README suggests (a goroutine from Obtain to Release)",
			Flaw:    "a process paused past the lease refreshes nothing, then writes: two holders"}, libs.redislockRefresh},
		{Info{Name: "etcd-mutex", Try: true,
			Summary: "etcd client v3.7.3's concurrency.Mutex as shipped: a Session per acquisition (its lease the lock's TTL, kept alive), NewMutex, Lock, business, Unlock, Close; the write carries no fencing token",
			Flaw:    "a holder paused past its session's lease loses its key, the next enters, and the paused one's late write lands: the etcd rung's fencing token is the fix"}, libs.etcdMutex},
		{Info{Name: "zk-lock", Try: true,
			Summary: "go-zookeeper/zk v1.0.4's Lock as shipped: NewLock(conn, path, WorldACL), Lock, business, Unlock, on the process's session (its timeout the lease); Lock takes no context: the request stops waiting at its bound, and a Lock that gets the lock after that unlocks it at once",
			Flaw:    "a holder paused past its session loses its znode and writes anyway (no fence); a waiter that gave up keeps its place in line until its turn"}, libs.zkLock},
		{Info{Name: "rueidislock", Try: true,
			Summary: "redis/rueidis v1.0.79's rueidislock as its README shows: NewLocker (KeyMajority 1, the lease its KeyValidity, extended every half of it), WithContext(ctx, key) until the request's bound, the business checks the returned context before its write, cancel releases; with its README's DisableCache (with client-side caching on, the library loses a waiter's wake-up when an attempt's reply comes late), so a waiter tries again every 20ms and a lost key is learnt at the next extension",
			Flaw:    "a process frozen past the lease freezes the extension and the check with it, and on waking writes before it learns the lock is gone"}, libs.rueidislock},
		{Info{Name: "db-optimistic", Atomic: true, Store: StoreMariaDB, Unavailable: noDB, Waits: []WaitMode{WaitQueue, WaitBackoff},
			Summary: "no lock: the stock row carries a version; UPDATE ... WHERE version = ? retried when another write got there first; a process's writers line up in memory (wait=queue), or each retries on its own (wait=backoff)",
			Flaw:    "under contention most tries lose and retry: cost, not safety (wait=backoff: a hundred writers mostly lose, and some lose every try)"}, nil},
		{Info{Name: "atomic",
			Summary: "no lock: one Lua script checks and decrements (or increments)",
			Flaw:    "none, but only when the whole operation fits in one script",
			Atomic:  true}, nil},
	} {
		if u, ok := r.Locker.(unavailable); ok {
			r.Info.Unavailable = u.err.Error()
		}
		l.rungs = append(l.rungs, r.Info)
		l.lockers[r.Name] = r.Locker
	}
	return l
}

// Rungs lists every rung in ladder order.
func (l *Ladder) Rungs() []Info { return append([]Info(nil), l.rungs...) }

// Names lists every rung's name in ladder order.
func (l *Ladder) Names() []string {
	names := make([]string, len(l.rungs))
	for i, r := range l.rungs {
		names[i] = r.Name
	}
	return names
}

// Lookup returns the rung called name and its Locker (nil for the atomic
// ceiling), or false when there is no such rung.
func (l *Ladder) Lookup(name string) (Info, Locker, bool) {
	for _, r := range l.rungs {
		if r.Name == name {
			return r, l.lockers[name], true
		}
	}
	return Info{}, nil, false
}

// unavailable is a Locker that cannot work in this process.
type unavailable struct{ err error }

func (u unavailable) Obtain(context.Context, string, Call) (Lock, error) { return nil, u.err }
