// Package appwire connects one app instance (cmd/app) to the servers its
// flags name: the main Redis or a Redis Cluster, the Redlock masters, and
// the back ends of the rungs that are not Redis's. It holds the clients'
// settings the lab depends on (no retries of a command that timed out,
// one dial attempt), so the main reads as flags, wiring, serving.
package appwire

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// PasswordEnv is the variable the app reads its Redis servers' password
// from (the stack's RedisPasswordEnv): in the environment, which other
// users cannot read, never on the command line, which they can.
const PasswordEnv = "LOCKLADDER_REDIS_PASSWORD"

// Servers are the addresses and client settings from the app's flags.
type Servers struct {
	Redis     string // one Redis, host:port
	Cluster   string // a Redis Cluster's nodes, comma-separated, instead of Redis
	Masters   string // Redlock's independent masters, comma-separated
	ZooKeeper string
	Etcd      string
	MySQL     string // a DSN without a database
	// Password is what every Redis here requires (AUTH): the stack's,
	// from PasswordEnv; "" for none.
	Password string
	Postgres string // a DSN (a URL)

	Timeout time.Duration // dial, read and write timeout of each Redis call
	Pool    int           // Redis connection pool size
	Retries int           // -1: a command that timed out is never resent
	Lease   time.Duration // the locks' lease: ZooKeeper's session timeout
	Wait    time.Duration // how long a request waits for a lock
}

// Clients are the connected clients, for the ladder and the inventory.
type Clients struct {
	Redis      redis.UniversalClient
	Where      string           // the main Redis, for the log
	Notifier   *notify.Notifier // the main Redis's announcements
	Backends   ladder.Backends
	Redlock    lock.RedlockOptions
	Optimistic *inventory.DBStore // nil without MariaDB

	closers []func()
}

// Close closes every client, the last opened first.
func (c *Clients) Close() {
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
}

// Connect opens the clients s names. A server that does not answer is
// logged, not fatal: its rungs answer 503 naming it.
func Connect(s Servers, log *slog.Logger) *Clients {
	c := &Clients{Where: s.Redis}
	// Every client, the main Redis's and each Redlock master's, alike
	// but for maxRetries.
	newClient := func(addr string, maxRetries int) *redis.Client {
		return redis.NewClient(&redis.Options{
			Addr:         addr,
			Password:     s.Password,
			DialTimeout:  s.Timeout,
			ReadTimeout:  s.Timeout,
			WriteTimeout: s.Timeout,
			PoolSize:     s.Pool,
			// One dial attempt: with Redis down, fail the request at once
			// rather than after go-redis's default five attempts 100ms apart.
			DialerRetries: 1,
			// No automatic retries (-1): go-redis would resend a command
			// whose reply timed out, and a sale that already ran would run
			// twice. A failed call fails the request (503) instead. Only
			// -redis-retries changes it, for the main client, to show that
			// trap (0 means go-redis's default, 3, too).
			MaxRetries: maxRetries,
		})
	}

	// The main Redis: one server, or a Redis Cluster. Every key the lab
	// touches together carries the item's hash tag (package inventory),
	// so on a cluster each script and transaction runs on one node.
	var notifyOpt notify.Options
	if s.Cluster != "" {
		notifyOpt = c.cluster(s, log)
	} else {
		rdb := newClient(s.Redis, s.Retries)
		c.closers = append(c.closers, func() { rdb.Close() })
		announce(log, rdb, "redis "+s.Redis)
		c.Redis = rdb
	}

	for _, addr := range strings.Split(s.Masters, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		m := newClient(addr, -1)
		c.closers = append(c.closers, func() { m.Close() })
		if len(c.Backends.Masters) == 0 {
			// The heads of this process's redlock lines hear the lock's
			// deletions from the first master. When it is down they
			// poll, every 20ms.
			announce(log, m, "redlock master "+addr)
			n := notify.New(m, notify.Options{Fallback: 20 * time.Millisecond})
			c.Redlock.Notifier = n
			c.closers = append(c.closers, func() { n.Close() })
		}
		c.Backends.Masters = append(c.Backends.Masters, m)
	}

	// One subscription per process hears Redis announce the lock keys'
	// deletions, and fair's handoffs: notify waiters (wait=notify) and
	// fair's queue wake on it.
	c.Notifier = notify.New(c.Redis, notifyOpt)
	c.closers = append(c.closers, func() { c.Notifier.Close() })
	c.Notifier.Ready() // subscribe now rather than at the first waiter

	c.Backends.Redis = c.Redis
	var closeOthers func()
	c.Optimistic, closeOthers = others(log, &c.Backends, s)
	c.closers = append(c.closers, closeOthers)
	return c
}

// cluster connects to the Redis Cluster and returns the notifier's
// options that follow the item's slot.
func (c *Clients) cluster(s Servers, log *slog.Logger) notify.Options {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:         strings.Split(s.Cluster, ","),
		Password:      s.Password,
		DialTimeout:   s.Timeout,
		ReadTimeout:   s.Timeout,
		WriteTimeout:  s.Timeout,
		PoolSize:      s.Pool,
		DialerRetries: 1,
		MaxRetries:    s.Retries,
	})
	c.closers = append(c.closers, func() { cc.Close() })
	cc.AddHook(reloadOnConnError{cc})
	c.Redis, c.Where = cc, "cluster "+s.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		return notify.EnableKeyspaceEvents(ctx, node)
	})
	cancel()
	if err != nil {
		log.Warn("keyspace events off: notify waiters fall back to their tick", "server", c.Where, "err", err)
	}
	// The announcements subscription goes to the item's master, and
	// follows its slot after a failover (notify.Options.Channel). The
	// other items' lock keys live on the other masters, whose keyspace
	// events are theirs alone: one subscription each.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opt, err := notify.ClusterOptions(ctx, cc, inventory.ItemTag)
	if err != nil {
		log.Warn("keyspace events of the other masters off: their items' notify waiters fall back to their tick", "server", c.Where, "err", err)
	}
	return opt
}

// announce has rdb's server announce every key's deletion and expiry,
// which WaitNotify waiters (and redlock's lines) wake on. A server that
// refuses leaves them to their fallback tick: said, not fatal.
func announce(log *slog.Logger, rdb *redis.Client, what string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := notify.EnableKeyspaceEvents(ctx, rdb); err != nil {
		log.Warn("keyspace events off: notify waiters fall back to their tick", "server", what, "err", err)
	}
}
