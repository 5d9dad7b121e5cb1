package page

// The course: the ladder one rung a step, in docs/ladder.md's order, each
// rung's flaw leading to the next rung's fix; then the other back ends,
// the libraries, and the lock that is no lock. What a step says is here;
// its code is the rung's own, cut from lock/ (code.go).

// Step is one step of the course: one rung, one idea.
type Step struct {
	Lock  string // the rung: the step's address is /learn/LOCK
	Part  string // the part of the course it opens, when it opens one
	Title string // its one idea, as a heading
	// Brief says what the rung does and where it breaks, citing its
	// sources by key ([000]); Sources are those keys, named in full.
	Brief   string
	Sources []string
	// Changed says what changed from the step before ("": the first);
	// Diff, that the change is a few lines of the step before's code,
	// marked on both steps (elsewhere a step's code is new code).
	Changed string
	Diff    bool
	// Scenario is the race's scenario (docs/scenarios.md), Setup what it
	// does, in a learner's words.
	Scenario, Setup string
	Cuts            []Cut
	// Promise and Found: a library's promise, and what the lab found
	// (docs/libraries.md).
	Promise, Found string
	// Next says what the next step does about this one's flaw; Fix, a
	// piece of the next step's code, finds the line that does it.
	Next, Fix string
}

// Sources are the course's sources by key, named by title (the README's
// References).
var Sources = map[string]string{
	"000":   `[000] BugMaker-shen, "Redis distributed lock"`,
	"001":   `[001] "Handwritten Redis distributed lock (2)"`,
	"002":   `[002] imingyu, "On the correct implementation of Redis distributed locks"`,
	"003":   `[003] "Distributed lock guide 03: Redis operations made atomic with Lua"`,
	"004":   `[004] "Redis SETNX for a distributed lock, explained"`,
	"K16":   `[K16] Martin Kleppmann, "How to do distributed locking"`,
	"A16":   `[A16] Salvatore Sanfilippo (antirez), "Is Redlock safe?"`,
	"DMS12": `[DMS12] Dice, Marathe, Shavit, "Lock Cohorting: A General Technique for Designing NUMA Locks"`,
	"J20":   `[J20] Kyle Kingsbury, "Jepsen: etcd 3.4.3"`,
}

// The scenarios in a learner's words: what the race does besides many
// buyers at once.
const (
	setupNormal  = "No fault: only many buyers at once."
	setupCrash   = "A few buyers' app instances die right after they take the lock, and start again."
	setupSlow    = "A few sales take 600 ms, three times the lock's 200 ms lease."
	setupPause   = "A few holders' instances freeze inside the sale for 800 ms, four times the 200 ms lease (as a long garbage-collection pause would), and stay frozen until another buyer has written the stock."
	setupSession = "A few holders' instances freeze inside the sale for 2.5 s: longer than the 1 s ZooKeeper session or etcd lease that holds their lock."
	setupCut     = "A few sales take 600 ms. While each holds the lock, the lab ends its database session, as a connection pooler, a failover or a network cut would."
)

const (
	partRedis = "Redis, one fix at a time"
	partOther = "The other back ends"
	partLibs  = "The libraries"
	partNone  = "No lock at all"
)

// Course is the steps, in order.
var Course = []Step{
	{
		Lock: "none", Part: partRedis, Title: "No lock",
		Brief: "A sale is three steps: read the stock, check it is above zero, write it back one lower. [000] runs them with no lock under ab -n 5000 -c 100. " +
			"Two sales that read the same stock both write the same number: two items sold, one taken from the stock.",
		Sources: []string{"000"}, Scenario: "normal", Setup: setupNormal,
		Cuts: []Cut{{"lock/rung00_none.go", "None.Obtain"}, {"lock/rung00_none.go", "noop.Release"},
			{"inventory/inventory.go", "Store.plain"}, {"inventory/inventory.go", "sellOne"}},
		Next: "A lock: one sale at a time runs the three steps.", Fix: "case m.slot <- struct{}{}:",
	},
	{
		Lock: "local", Title: "A lock inside one process",
		Brief: "[000]'s first fix is Java's synchronized: a mutex in the process, so one sale at a time. " +
			"The lab runs three copies of the app (app1, app2, app3) behind a load balancer, and each copy has a mutex of its own.",
		Sources: []string{"000"}, Scenario: "normal", Setup: setupNormal,
		Changed: "A mutex per item inside the process: a sale waits for its slot, and gives it back after.",
		Cuts:    []Cut{{"lock/rung01_local.go", "Local.Obtain"}, {"lock/rung01_local.go", "localLock.Release"}},
		Next:    "Put the lock where every copy sees it: a key in Redis.", Fix: `l.rdb.SetNX(ctx, key, "1", 0)`,
	},
	{
		Lock: "setnx", Title: "A shared key in Redis",
		Brief: "SETNX sets a key only if it does not exist yet: the request that sets it holds the lock, and DEL gives it back [000][004]. " +
			"Every copy of the app asks the same Redis, so one sale runs at a time, anywhere. But the key has no time to live: if its holder dies, nobody deletes it.",
		Sources: []string{"000", "004"}, Scenario: "crash", Setup: setupCrash,
		Changed: "The lock moves out of the process into Redis: SETNX takes it, DEL gives it back.",
		Cuts:    []Cut{{"lock/rung02_setnx.go", "SetNX.Try"}, {"lock/rung02_setnx.go", "delLock.Release"}},
		Next:    "Give the key a time to live, so that a dead holder's lock goes away on its own.", Fix: "PExpire(",
	},
	{
		Lock: "setnx-expire", Diff: true, Title: "A time to live, set apart",
		Brief: "[000]'s next fix gives the key a time to live with EXPIRE, so that a dead holder's lock lapses. " +
			"But SETNX and EXPIRE are two commands, and a process can die between them: a lock with no time to live again.",
		Sources: []string{"000"}, Scenario: "crash-before-expire",
		Setup:   "A few buyers' app instances die between the two commands: after SETNX, before EXPIRE.",
		Changed: "A second command after SETNX: EXPIRE (PEXPIRE, in milliseconds).",
		Cuts:    []Cut{{"lock/rung03_setnx_expire.go", "SetNXExpire.Try"}, {"lock/rung02_setnx.go", "delLock.Release"}},
		Next:    "Set the key and its time to live in one command: SET key 1 NX PX ttl.", Fix: `l.rdb.SetNX(ctx, key, "1", c.TTL(l.ttl))`,
	},
	{
		Lock: "setnx-px", Diff: true, Title: "The lock and its lease in one command",
		Brief: "SET key 1 NX PX 200 takes the lock and its lease at once [000]: the key deletes itself after 200 ms, and no crash can come between the two. " +
			"But a sale can take longer than the lease. The key lapses, B takes the lock, and A's DEL then deletes B's lock: C walks in while B still sells.",
		Sources: []string{"000"}, Scenario: "slow", Setup: setupSlow,
		Changed: "SETNX and EXPIRE became one command; the release is still a plain DEL.",
		Cuts:    []Cut{{"lock/rung04_setnx_px.go", "SetNXPX.Try"}, {"lock/rung02_setnx.go", "delLock.Release"}},
		Next:    "Write a token of your own in the key, and delete the key only while it holds your token.", Fix: "if v != l.token {",
	},
	{
		Lock: "check-del", Diff: true, Title: "An owner token",
		Brief: "Each holder writes a random token as the key's value, and releases by reading the key, comparing it with its token, then deleting it [000][002]. " +
			"A holder whose lease lapsed finds another's token and leaves that lock alone. But GET and DEL are two commands, and the lease can lapse between them.",
		Sources: []string{"000", "002"}, Scenario: "check-pause",
		Setup:   "Every sale takes 20 ms. A few holders stop between the release's GET and its DEL until their 200 ms lease has run out and another buyer has taken the lock.",
		Changed: "The value is a random token; the release is GET, compare, DEL.",
		Cuts:    []Cut{{"lock/rung05_check_del.go", "CheckDel.Try"}, {"lock/rung05_check_del.go", "checkDelLock.Release"}},
		Next:    "Compare and delete in one Lua script, which Redis runs as one step.", Fix: `if redis.call("GET", KEYS[1]) == ARGV[1] then`,
	},
	{
		Lock: "lua", Diff: true, Title: "Compare and delete in one script",
		Brief: "Redis runs a Lua script as one step: nothing comes between its GET and its DEL [003][000]. The release is now right. " +
			"The lease is not: a sale that outlives it still runs beside the next holder's.",
		Sources: []string{"003", "000"}, Scenario: "slow", Setup: setupSlow,
		Changed: "The release is one script: its GET, compare and DEL cannot be split.",
		Cuts: []Cut{{"lock/rung06_lua.go", "Lua.Try"}, {"lock/rung06_lua.go", "luaLock.Release"},
			{"lock/rung06_lua_release.lua", ""}},
		Next: "The next two steps try another kind of lease: an expiry time written in the key, which each waiter checks by its own clock.",
		Fix:  "expiry := now.Add(c.TTL(l.ttl)).UnixMilli() + 1",
	},
	{
		Lock: "del-setnx", Title: "An expiry time in the key",
		Brief: "[004] writes the lock's expiry time as the key's value. A waiter that reads a time already past deletes the key and sets its own. " +
			"Two waiters that read the same past time both delete and both set: P3's DEL deletes the lock P2 has just taken, and both sell.",
		Sources: []string{"004"}, Scenario: "crash-wait",
		Setup:   "Many buyers wait at once, each trying every 10 ms. Four times, a holder's instance dies holding the lock; the waiters find its expiry passed and take it over.",
		Changed: "No time to live in Redis: the value is an expiry time, and the waiters judge it by their clocks.",
		Cuts:    []Cut{{"lock/rung07_del_setnx.go", "DelSetNX.Try"}, {"lock/rung07_del_setnx.go", "expiryLock.Release"}},
		Next:    "GETSET writes a new value and returns the old one in one command: one waiter wins the swap.", Fix: "l.rdb.GetSet(ctx, key, expiry)",
	},
	{
		Lock: "getset", Diff: true, Title: "GETSET: one winner, if the clocks agree",
		Brief: "[004]'s fix: a waiter that finds the lock expired swaps in its own expiry with GETSET, and wins only if the old value it gets back is the expired one it read. " +
			"One winner, whatever the timing. But each instance judges expiry by its own clock, and a clock that runs ahead takes a lock that is still held.",
		Sources: []string{"004"}, Scenario: "skew",
		Setup:   "Every sale takes 5 ms; the third instance's clock runs 2 s ahead of the others'.",
		Changed: "DEL then SETNX became one GETSET.",
		Cuts:    []Cut{{"lock/rung08_getset.go", "GetSet.Try"}, {"lock/rung07_del_setnx.go", "expiryLock.Release"}},
		Next:    "Stop trusting the clocks: keep the lease in Redis, and renew it while the holder works.", Fix: "wd = r.startWatchdog(h, ttl)",
	},
	{
		Lock: "reentrant", Title: "A watchdog renews the lease",
		Brief: "[001] keeps the lock in a hash of owner to count, through Lua scripts [003], and a watchdog renews the lease every third of it while the holder works: a slow sale keeps its lock. " +
			"But a frozen process (a long garbage-collection pause, a stopped machine) freezes its watchdog too, and wakes after its lease has gone.",
		Sources: []string{"001", "003"}, Scenario: "pause", Setup: setupPause,
		Changed: "Scripts take and renew the lock; a watchdog renews it every third of the lease.",
		Cuts: []Cut{{"lock/rung09_reentrant.go", "Reentrant.Try"}, {"lock/rung09_reentrant.go", "Reentrant.startWatchdog"},
			{"lock/rung09_reentrant.go", "reentrantLock.Release"}, {"lock/rung09_reentrant_acquire.lua", ""}, {"lock/rung09_reentrant_renew.lua", ""}},
		Next: "What if Redis itself fails? Redlock takes the lock on a majority of five Redis servers.", Fix: "if held >= quorum && left > 0 {",
	},
	{
		Lock: "redlock", Title: "Five masters: more servers, not more safety",
		Brief: "Redlock sets the key on five independent Redis masters and holds the lock when a majority said yes within the lease [002]: it survives two masters down. " +
			"[K16] shows that it still assumes bounded pauses and clocks, and [A16] answers. A holder frozen past its lease still writes beside the next one.",
		Sources: []string{"002", "K16", "A16"}, Scenario: "pause", Setup: setupPause,
		Changed: "The same SET NX PX, sent to five masters at once: a majority within the lease wins.",
		Cuts:    []Cut{{"lock/rung10_redlock.go", "Redlock.Attempt"}, {"lock/rung10_redlock.go", "RedlockLock.Release"}},
		Next:    "Let the stock refuse the late writer: a fencing token.", Fix: `return redis.call("INCR", KEYS[2])`,
	},
	{
		Lock: "fenced", Title: "A fencing token",
		Brief: "The script that takes the lock also increments a counter and hands the holder the new number: its token [K16]. The holder sends its token with its write, and the stock's script refuses a token lower than the highest it has seen. " +
			"A holder that wakes after its lease has a lower token than the next holder's: its write is refused.",
		Sources: []string{"K16"}, Scenario: "pause", Setup: setupPause,
		Changed: "Taking the lock also hands out a token, and the write checks it.",
		Cuts: []Cut{{"lock/rung11_fenced.go", "Fenced.Try"}, {"lock/rung11_fenced_acquire.lua", ""},
			{"inventory/fenced_write.lua", ""}},
		Next: "Safe; now fast. Hand the lock straight to the next waiter instead of letting every waiter poll.", Fix: `redis.call("SET", KEYS[1], head, "PX", ARGV[2])`,
	},
	{
		Lock: "fair", Title: "The lock handed on",
		Brief: "fenced's waiters poll: each asks again and again, and whoever asks first after a release wins. " +
			"fair keeps a queue in Redis: the release hands the lock to the oldest waiter still there and wakes exactly that one. Still fenced, and no time lost between holders.",
		Scenario: "pause", Setup: setupPause,
		Changed: "A queue in Redis; the release script hands the lock on.",
		Cuts: []Cut{{"lock/rung12_fair.go", "Fair.Obtain"}, {"lock/rung12_fair.go", "fairLock.Release"},
			{"lock/rung12_fair_release.lua", ""}},
		Next: "Inside one instance, pass the lock in memory before giving it back to Redis.", Fix: "to <- baton{pass: true}",
	},
	{
		Lock: "cohort", Title: "Pass it inside the process first",
		Brief: "Lock cohorting [DMS12]: an instance that holds fair's lock passes it in memory to its own next request, up to a bound, before it gives it back in Redis. " +
			"Fewer round trips per sale, and each section still carries its fencing token.",
		Sources: []string{"DMS12"}, Scenario: "pause", Setup: setupPause,
		Changed: "A line per instance: the release passes the lock in memory when a request of the same instance waits.",
		Cuts:    []Cut{{"lock/rung13_cohort.go", "Cohort.Obtain"}, {"lock/rung13_cohort.go", "CohortSection.Release"}},
		Next:    "Redis is not the only place for a lock. Next: ZooKeeper, etcd and PostgreSQL, each judged by the same races.",
	},
	{
		Lock: "zookeeper", Part: partOther, Title: "ZooKeeper: the session is a lease",
		Brief: "Each waiter creates a numbered entry (a znode) that lives only as long as its session; the lowest number holds the lock, and each waiter watches the one before it. A dead holder's session ends and takes its entry with it. " +
			"A holder frozen past its session timeout loses its entry while it still believes it holds the lock, and nothing refuses its write.",
		Sources: []string{"000"}, Scenario: "pause-session", Setup: setupSession,
		Changed: "ZooKeeper instead of Redis: a znode per waiter, in line.",
		Cuts: []Cut{{"lock/rung14_zookeeper.go", "ZooKeeper.createIn"}, {"lock/rung14_zookeeper.go", "ZooKeeper.predecessor"},
			{"lock/rung14_zookeeper.go", "zkLock.Release"}},
		Next: "etcd's lock carries a token for free: its key's create revision.", Fix: "return l.m.rev",
	},
	{
		Lock: "etcd", Title: "etcd: the revision fences",
		Brief: "etcd's Mutex recipe: a key per waiter on a kept-alive lease; the key with the lowest create revision holds the lock. " +
			"A frozen holder's lease expires like any other, but the revision only grows: the lab sends it as a fencing token, and the late write is refused.",
		Sources: []string{"K16"}, Scenario: "pause-session", Setup: setupSession,
		Changed: "etcd instead of ZooKeeper, and the key's revision used as a fencing token.",
		Cuts: []Cut{{"lock/rung15_etcd.go", "etcdMutex.enqueue"}, {"lock/rung15_etcd.go", "etcdLock.Token"},
			{"lock/rung15_etcd.go", "etcdLock.Release"}},
		Next: "A database can lock too. PostgreSQL's advisory lock belongs to a session.",
	},
	{
		Lock: "pg-advisory", Title: "A database's lock is its session's",
		Brief: "PostgreSQL's pg_try_advisory_lock holds a lock for as long as the session lives. It has no lease: a frozen holder only makes the others wait. " +
			"But a session that ends under its holder (a connection pooler, a failover, a network cut) frees the lock at once, and the holder writes on.",
		Scenario: "session-cut", Setup: setupCut,
		Changed: "PostgreSQL instead of etcd: the lock lives as long as the holder's session.",
		Cuts:    []Cut{{"lock/rung17_pg_advisory.go", "PGAdvisory.Try"}, {"lock/rung17_pg_advisory.go", "pgAdvisoryLock.Release"}},
		Next:    "Draw a fencing token on the holder's session.", Fix: `"SELECT nextval('"+PGFenceSequence+"')"`,
	},
	{
		Lock: "pg-advisory-fenced", Title: "...and a token drawn on the session",
		Brief: "The same advisory lock, then nextval of a sequence on the same session: a token that grows from holder to holder. " +
			"The stock refuses a lower one, so a holder whose session was cut writes nothing.",
		Scenario: "session-cut", Setup: setupCut,
		Changed: "After the lock, the holder draws a token from a sequence; the write checks it.",
		Cuts:    []Cut{{"lock/rung19_pg_advisory_fenced.go", "PGAdvisoryFenced.Try"}, {"lock/rung19_pg_advisory_fenced.go", "PGAdvisoryFenced.draw"}},
		Next:    "The locks Go programs use most: the libraries, each called as its README shows.",
	},
	{
		Lock: "redsync", Part: partLibs, Title: "redsync",
		Brief:    "go-redsync/redsync v4, called as its README shows: NewMutex(key, WithExpiry(lease)), Lock, the sale, Unlock. Over one Redis it is step 7's lock: SET NX PX and a compare-and-delete.",
		Scenario: "slow", Setup: setupSlow,
		Promise: "A mutex with an expiry; call Extend to hold it longer.",
		Found:   "Nothing renews the lease unless you call Extend: a sale past it lets another buyer in, and Unlock then fails (lock already expired), after the damage.",
		Changed: "A library's code instead of the lab's: the lab calls it the way its README does.",
		Cuts:    []Cut{{"lock/libs/redsync.go", "Redsync.Obtain"}, {"lock/libs/redsync.go", "redsyncLock.Release"}},
		Next:    "The same Mutex over five masters is redsync's Redlock.",
	},
	{
		Lock: "redsync-redlock", Title: "redsync over five masters",
		Brief:   "The same redsync Mutex over five independent masters, a pool each: Redlock, as step 11 [002].",
		Sources: []string{"002"}, Scenario: "slow", Setup: setupSlow,
		Promise: "Redlock: the lock holds while a majority of the masters is up.",
		Found:   "More servers, not more safety: a sale past the lease, or a pause, yields two holders; and 3 of 5 masters restarted empty grant the lock again, unless they fsync every write.",
		Changed: "One pool per master: five in all.",
		Cuts:    []Cut{{"lock/libs/redsync.go", "NewRedsync"}, {"lock/libs/redsync.go", "Redsync.Obtain"}},
		Next:    "bsm/redislock: another small Redis lock.",
	},
	{
		Lock: "redislock", Title: "redislock",
		Brief:    "bsm/redislock, called as its README shows: Obtain(ctx, key, lease, &Options{RetryStrategy: LinearBackoff(10ms)}), the sale, Release.",
		Scenario: "slow", Setup: setupSlow,
		Promise: "A simple lock with a time to live, and a Refresh to extend it.",
		Found:   "No renewal unless you call Refresh: a sale past the lease lets another in, and Release then returns ErrLockNotHeld.",
		Changed: "Another library, the same idea: SET NX PX and a scripted release.",
		Cuts:    []Cut{{"lock/libs/redislock.go", "Redislock.obtain"}, {"lock/libs/redislock.go", "redislockLock.Release"}},
		Next:    "Call Refresh every third of the lease, as its README suggests.", Fix: "h.l.Refresh(rctx, lease, nil)",
	},
	{
		Lock: "redislock-refresh", Title: "redislock with Refresh",
		Brief:    "redislock plus Refresh every third of the lease while the sale runs, as its README suggests: step 10's watchdog, by hand.",
		Scenario: "pause", Setup: setupPause,
		Promise: "A lock that lasts as long as you refresh it.",
		Found:   "Safe for a slow sale. A frozen process refreshes nothing, wakes, and writes beside the next holder.",
		Changed: "A goroutine refreshes the lease while the sale runs.",
		Cuts:    []Cut{{"lock/libs/redislock_refresh.go", "RedislockRefresh.Obtain"}, {"lock/libs/redislock_refresh.go", "refreshedLock.refresh"}},
		Next:    "rueidislock also tells the sale when its lock is gone.",
	},
	{
		Lock: "rueidislock", Title: "rueidislock",
		Brief:    "redis/rueidis' rueidislock, as its README shows: WithContext(ctx, key) takes the lock, extends it every half lease, and cancels the context it returns when the lock is lost; the sale checks that context before it writes.",
		Scenario: "pause", Setup: setupPause,
		Promise: "A context that ends when the lock is lost.",
		Found:   "Safe for a slow sale. A frozen process freezes the extension and the check with it, and on waking writes before it learns the lock is gone.",
		Changed: "The lock hands the sale a context that ends when the lock is lost.",
		Cuts:    []Cut{{"lock/libs/rueidislock.go", "Rueidislock.Obtain"}, {"lock/libs/rueidislock.go", "rueidisLock.Release"}},
		Next:    "etcd's own Mutex, as shipped, without the lab's fence.",
	},
	{
		Lock: "etcd-mutex", Title: "etcd's Mutex, as shipped",
		Brief:   "go.etcd.io/etcd's concurrency.Mutex: NewSession(cli, WithTTL(lease)), NewMutex, Lock, the sale, Unlock. Step 16's lock without the fence: the write carries no token.",
		Sources: []string{"J20"}, Scenario: "pause-session", Setup: setupSession,
		Promise: "A lock held by a session its client keeps alive.",
		Found:   "Safe for a slow sale and a crash. A holder frozen past its session's lease loses its key, the next one enters, and the late write lands ([J20] found the same). The lab's etcd rung, fenced, is safe here.",
		Changed: "The library's Mutex instead of the lab's recipe, and no token on the write.",
		Cuts:    []Cut{{"lock/libs/etcd_mutex.go", "EtcdMutex.Obtain"}, {"lock/libs/etcd_mutex.go", "etcdMutexLock.Release"}},
		Next:    "go-zookeeper's Lock, as shipped.",
	},
	{
		Lock: "zk-lock", Title: "go-zookeeper's Lock",
		Brief:    "github.com/go-zookeeper/zk's Lock: NewLock(conn, path, acl), Lock, the sale, Unlock, on the process's session. Lock takes no context: a waiter cannot give up.",
		Scenario: "pause-session", Setup: setupSession,
		Promise: "ZooKeeper's lock recipe, ready made.",
		Found:   "Safe for a slow sale and a crash. A holder frozen past its session loses its znode and writes anyway; and when ZooKeeper restarted under load, the line stopped for good.",
		Changed: "The library's recipe instead of the lab's.",
		Cuts:    []Cut{{"lock/libs/zk_lock.go", "ZKLock.Obtain"}, {"lock/libs/zk_lock.go", "zkLockHeld.Release"}},
		Next:    "Last: when the whole sale fits in one script, no lock at all.",
	},
	{
		Lock: "atomic", Part: partNone, Title: "When the sale fits in one script, no lock",
		Brief: "If the whole sale (read, check, write, count) fits in one Lua script, Redis runs it as one step and nothing can come between [003]. " +
			"No lock, safe under every fault here, and the fastest: the ceiling every lock is measured against.",
		Sources: []string{"003"}, Scenario: "slow", Setup: setupSlow,
		Changed: "No lock: the sale itself is the script.",
		Cuts:    []Cut{{"inventory/inventory.go", "Store.SellAtomic"}, {"inventory/sell_atomic.lua", ""}},
	},
}
