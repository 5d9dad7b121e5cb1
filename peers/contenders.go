package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// contender is one lock under test: setup builds, over a fresh client, the
// function that runs one critical section (false: the lock was not had
// within the bound).
type contender struct {
	name, settings string
	setup          func(rdb *redis.Client, masters []*redis.Client) (op func(ctx context.Context, key string) (bool, error), closeFn func())
	// ownClient: the lock talks to its server through a client of its
	// own (rueidis, pgx), whose round trips the go-redis hook does not
	// see: rtt/op is unknown.
	ownClient bool
}

// critical is the business: GET the counter, SET it one higher. then, if
// not nil, queues more commands behind the SET (a release), in one round
// trip.
func critical(ctx context.Context, rdb *redis.Client, key string, then func(redis.Pipeliner)) error {
	n, err := rdb.Get(ctx, key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if then == nil {
		return rdb.Set(ctx, key, n+1, 0).Err()
	}
	var set *redis.StatusCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, key, n+1, 0)
		then(p)
		return nil
	})
	return set.Err()
}

// carriedCritical is critical for a lock that carries the counter and
// commits the writes (lock.Carrier): GET it only when the lock does not
// carry it, queue the SET as a compare-and-set behind the writes before
// it, release (the lock passes on before the write lands), then wait for
// the write. It returns whether the write landed.
func carriedCritical(ctx context.Context, rdb *redis.Client, key string, held lock.Lock, c lock.Carrier) error {
	n, have := c.Carried(key)
	if !have {
		var err error
		if n, err = rdb.Get(ctx, key).Int64(); err != nil && !errors.Is(err, redis.Nil) {
			held.Release(ctx)
			return err
		}
	}
	landed := c.Commit(rdb, func(p redis.Pipeliner) func() error {
		cmd := casIncr.Eval(ctx, p, []string{key}, n, n+1)
		return func() error {
			set, err := cmd.Int64()
			if err == nil && set != 1 {
				err = fmt.Errorf("%s moved under the lock", key)
			}
			return err
		}
	})
	c.Carry(key, n+1)
	rerr := held.Release(ctx)
	if err := landed(); err != nil {
		return err
	}
	return rerr
}

// pipedCritical is critical for a lock whose sections send their
// commands down one pipe (lock.Piped): the GET goes at once (with the
// write queued before it), the SET is queued, the lock released (passed
// on before the SET lands), then the SET waited for.
func pipedCritical(ctx context.Context, rdb *redis.Client, key string, held lock.Lock, p lock.Piped) error {
	var n int64
	err := p.Send(rdb, func(pl redis.Pipeliner) func() error {
		get := pl.Get(ctx, key)
		return func() (err error) {
			if n, err = get.Int64(); errors.Is(err, redis.Nil) {
				err = nil
			}
			return err
		}
	}, false)()
	if err != nil {
		held.Release(ctx)
		return err
	}
	landed := p.Send(rdb, func(pl redis.Pipeliner) func() error {
		return pl.Set(ctx, key, n+1, 0).Err
	}, true)
	rerr := held.Release(ctx)
	if err := landed(); err != nil {
		return err
	}
	return rerr
}

// casIncr sets a counter from the value the caller computed from.
var casIncr = redis.NewScript(`
-- KEYS[1] counter; ARGV[1] the value expected (missing is "0"), ARGV[2] the new one.
if (redis.call("GET", KEYS[1]) or "0") ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[2])
return 1`)

// atomicIncr is the ceiling: the same GET and SET, in one script.
var atomicIncr = redis.NewScript(`
-- KEYS[1] counter. GET, add one, SET: what every lock above protects.
local n = tonumber(redis.call("GET", KEYS[1]) or "0") + 1
redis.call("SET", KEYS[1], n)
return n`)

func contenders(cfg config, pg *pgServer) []contender {
	labLock := func(name, settings string, mk func(rdb *redis.Client, masters []*redis.Client, n *notify.Notifier) lock.Locker) contender {
		return contender{name: name, settings: settings, setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
			if err := notify.EnableKeyspaceEvents(context.Background(), rdb); err != nil {
				panic(err)
			}
			n := notify.New(rdb, notify.Options{})
			<-n.Ready()
			l := mk(rdb, masters, n)
			return func(ctx context.Context, key string) (bool, error) {
				held, err := l.Obtain(ctx, "lock:"+key, lock.Call{})
				if errors.Is(err, lock.ErrNotObtained) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				if c, ok := held.(lock.Carrier); ok {
					return true, carriedCritical(ctx, rdb, key, held, c)
				}
				if p, ok := held.(lock.Piped); ok {
					return true, pipedCritical(ctx, rdb, key, held, p)
				}
				pr, ok := held.(lock.PipelineReleaser)
				if !cfg.pipeline || !ok {
					err = critical(ctx, rdb, key, nil)
					if rerr := held.Release(ctx); err == nil {
						err = rerr
					}
					return true, err
				}
				var released func() error
				err = critical(ctx, rdb, key, func(p redis.Pipeliner) { released = pr.ReleaseIn(ctx, p) })
				if released == nil {
					released = func() error { return held.Release(ctx) }
				}
				if rerr := released(); err == nil {
					err = rerr
				}
				return true, err
			}, func() { n.Close() }
		}}
	}
	// libRung is a library rung of the lab's (lock/lib_*.go) as the app
	// calls it: Obtain, the GET and SET, Release; no notifier, no
	// pipelined release (the rungs offer neither).
	libRung := func(name, settings string, mk func(rdb *redis.Client, masters []*redis.Client) lock.Locker) contender {
		return contender{name: name, settings: settings, setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
			l := mk(rdb, masters)
			return func(ctx context.Context, key string) (bool, error) {
				held, err := l.Obtain(ctx, "lock:"+key, lock.Call{})
				if errors.Is(err, lock.ErrNotObtained) || ctx.Err() != nil {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				err = critical(ctx, rdb, key, nil)
				if rerr := held.Release(ctx); err == nil {
					err = rerr
				}
				return true, err
			}, func() {}
		}}
	}
	// ownRung is a rung whose lock has a client of its own (libRung's
	// shape): mk returns the Locker, or why there is none.
	ownRung := func(name, settings string, mk func(rdb *redis.Client) (lock.Locker, error)) contender {
		return contender{name: name, settings: settings, ownClient: true, setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
			l, err := mk(rdb)
			if err != nil { // every operation fails, saying why
				return func(context.Context, string) (bool, error) { return false, err }, func() {}
			}
			return libRung(name, settings, func(*redis.Client, []*redis.Client) lock.Locker { return l }).setup(rdb, masters)
		}}
	}
	pgRung := func(name, settings string, mk func(pool *pgxpool.Pool, o lock.Options) lock.Locker) contender {
		return ownRung(name, settings, func(*redis.Client) (lock.Locker, error) {
			pool, err := pg.get(context.Background())
			if err != nil {
				return nil, err
			}
			// The app's wait: one try per process every 2ms (queue).
			return mk(pool, lock.Options{TTL: cfg.ttl, Wait: cfg.bound}), nil
		})
	}
	opts := func(n lock.Notifier, m lock.WaitMode) lock.Options {
		return lock.Options{TTL: cfg.ttl, Wait: cfg.bound, WaitMode: m, Retry: lock.FixedSleep(cfg.retry), Notifier: n}
	}
	pipe := ""
	if cfg.pipeline {
		pipe = "; release pipelined with the SET"
	}
	return []contender{
		{name: "redsync-10ms", settings: fmt.Sprintf("v4.18.1 called here, one pool; WithExpiry(%s), WithRetryDelay(%s), WithTries(unbounded: the %s bound ends it)", cfg.ttl, cfg.retry, cfg.bound),
			setup: func(rdb *redis.Client, _ []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				rs := redsync.New(goredis.NewPool(rdb))
				return func(ctx context.Context, key string) (bool, error) {
					m := rs.NewMutex("lock:"+key, redsync.WithExpiry(cfg.ttl), redsync.WithRetryDelay(cfg.retry), redsync.WithTries(1<<30))
					if err := m.LockContext(ctx); err != nil {
						if errors.Is(err, redsync.ErrFailed) || ctx.Err() != nil {
							return false, nil
						}
						return false, err
					}
					err := critical(ctx, rdb, key, nil)
					if _, uerr := m.UnlockContext(ctx); err == nil {
						err = uerr
					}
					return true, err
				}, func() {}
			}},
		libRung("redsync", "the lab's rung (libs.NewRedsync, one pool): a new Mutex per operation, WithExpiry(lease), WithTries(unbounded), the library's default 50-250ms random delay between tries, until the bound",
			func(rdb *redis.Client, _ []*redis.Client) lock.Locker {
				return libs.NewRedsync([]redis.UniversalClient{rdb}, lock.Options{TTL: cfg.ttl, Wait: cfg.bound})
			}),
		libRung("redislock", fmt.Sprintf("v0.9.4, the lab's rung (libs.NewRedislock): Obtain with ttl %s, RetryStrategy LinearBackoff(10ms), until the %s bound; what peers called directly before, the same calls", cfg.ttl, cfg.bound),
			func(rdb *redis.Client, _ []*redis.Client) lock.Locker {
				return libs.NewRedislock(rdb, lock.Options{TTL: cfg.ttl, Wait: cfg.bound})
			}),
		ownRung("rueidislock", fmt.Sprintf("redis/rueidis v1.0.79's rueidislock, the lab's rung (libs.NewRueidislock): NewLocker (KeyMajority 1, NoLoopTracking, KeyValidity %s, DisableCache: a waiter tries again every 20ms), WithContext until the %s bound, the returned cancel releases; its own rueidis client", cfg.ttl, cfg.bound),
			func(rdb *redis.Client) (lock.Locker, error) {
				opt, err := libs.RueidisOption(rdb)
				if err != nil {
					return nil, err
				}
				return libs.NewRueidislock(opt, lock.Options{TTL: cfg.ttl, Wait: cfg.bound}), nil
			}),
		pgRung("pg-advisory", "the lab's rung 17 (lock.NewPGAdvisory) on a PostgreSQL of its own, pgx v5.12.0, a pool of 32 as an app instance's: pg_try_advisory_lock on a connection borrowed per try, in the lab's wait (one try per process at a time, every 2ms), the connection held for the section, pg_advisory_unlock",
			func(pool *pgxpool.Pool, o lock.Options) lock.Locker { return lock.NewPGAdvisory(pool, o) }),
		pgRung("pg-advisory-xact", "the lab's rung 18 (lock.NewPGAdvisoryXact): the same with BEGIN; pg_try_advisory_xact_lock; COMMIT releases",
			func(pool *pgxpool.Pool, o lock.Options) lock.Locker { return lock.NewPGAdvisoryXact(pool, o) }),
		labLock("lua-fixed", fmt.Sprintf("SET NX PX + Lua release; wait=fixed, sleep %s (the articles)%s", cfg.retry, pipe),
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitFixed))
			}),
		labLock("lua-backoff", "the same; wait=backoff, exponential 1ms..32ms, full jitter"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitBackoff))
			}),
		labLock("lua-notify", "the same; wait=notify, woken over pub/sub by each release (fallback tick 100ms)"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitNotify))
			}),
		labLock("fair", "FIFO queue in Redis, handoff in the release script, the waiter woken by name; fencing token, watchdog"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return lock.NewFair(rdb, opts(n, ""))
			}),
		labLock("cohort", "fair's lock passed in memory to the process's next waiter, up to 16 sections or half a lease while another process waits in Redis (on past it while none does), then back through Redis; a fencing token per section; a section's SET goes in one pipeline with the next section's GET, the release behind the cohort's last SET",
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return speed.NewCohort(rdb, opts(n, ""), 0)
			}),
		labLock("cohort-carry", "cohort's lock carrying the counter it last computed: a section passed in memory does no GET, queues its SET as a compare-and-set (a Lua script) behind the writes before it and passes the lock on before the write lands; the writes go in order, in groups (one pipeline per group)",
			func(rdb *redis.Client, _ []*redis.Client, n *notify.Notifier) lock.Locker {
				return speed.NewCohortCarry(rdb, opts(n, ""), 0)
			}),
		{name: "redsync-5", settings: "v4.18.1 over the 5 masters, its defaults: expiry 8s, 32 tries, a random 50-250ms between them",
			setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				var pools []redsyncredis.Pool
				for _, m := range masters {
					pools = append(pools, goredis.NewPool(m))
				}
				rs := redsync.New(pools...)
				return func(ctx context.Context, key string) (bool, error) {
					m := rs.NewMutex("lock:" + key)
					if err := m.LockContext(ctx); err != nil {
						if errors.Is(err, redsync.ErrFailed) || ctx.Err() != nil || isTaken(err) {
							return false, nil
						}
						return false, err
					}
					err := critical(ctx, rdb, key, nil)
					if _, uerr := m.UnlockContext(ctx); err == nil {
						err = uerr
					}
					return true, err
				}, func() {}
			}},
		libRung("redsync-redlock", "the lab's rung (libs.NewRedsync over the 5 masters): WithExpiry(lease), WithTries(unbounded), the library's default 50-250ms random delay, until the bound",
			func(_ *redis.Client, masters []*redis.Client) lock.Locker {
				us := make([]redis.UniversalClient, len(masters))
				for i, m := range masters {
					us[i] = m
				}
				return libs.NewRedsync(us, lock.Options{TTL: cfg.ttl, Wait: cfg.bound})
			}),
		labLock("redlock", "the lab's rung 10 over the 5 masters, its default (wait=relay): one contender per process; a section that ends with another request in the line swaps its token for the next one's on the masters (a fresh majority-granted lease per section), up to 64 sections or half a lease",
			func(_ *redis.Client, masters []*redis.Client, _ *notify.Notifier) lock.Locker {
				return speed.RedlockLine(lock.NewRedlock(cmdables(masters), opts(nil, ""), lock.RedlockOptions{}))
			}),
		labLock("redlock-queue", "the same, wait=queue: every section takes the lock on the masters (SET NX on five) and releases it on five",
			func(_ *redis.Client, masters []*redis.Client, _ *notify.Notifier) lock.Locker {
				return speed.RedlockLine(lock.NewRedlock(cmdables(masters), opts(nil, lock.WaitQueue), lock.RedlockOptions{}))
			}),
		labLock("redlock-cohort", "the same, wait=cohort: a section that ends with another request in the line passes the lock on in memory while over half its validity is left",
			func(_ *redis.Client, masters []*redis.Client, _ *notify.Notifier) lock.Locker {
				return speed.RedlockLine(lock.NewRedlock(cmdables(masters), opts(nil, lock.WaitCohort), lock.RedlockOptions{}))
			}),
		{name: "atomic", settings: "no lock: the GET and SET in one Lua script (the ceiling)",
			setup: func(rdb *redis.Client, _ []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				return func(ctx context.Context, key string) (bool, error) {
					return true, atomicIncr.Run(ctx, rdb, []string{key}).Err()
				}, func() {}
			}},
	}
}

// isTaken reports whether redsync's error says the lock was held by
// another (it returns that, not ErrFailed, when its last try saw so).
func isTaken(err error) bool {
	var taken *redsync.ErrTaken
	var node *redsync.ErrNodeTaken
	return errors.As(err, &taken) || errors.As(err, &node)
}

// cmdables is masters as the Cmdables NewRedlock takes.
func cmdables(masters []*redis.Client) []redis.Cmdable {
	cs := make([]redis.Cmdable, len(masters))
	for i, m := range masters {
		cs[i] = m
	}
	return cs
}
