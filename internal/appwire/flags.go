package appwire

import (
	"flag"
	"os"
	"time"

	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/lock"
)

// Flags is the app's command line (cmd/app), parsed and checked. The
// stack checks the app flags it is given after -- with it too, before
// it starts anything (ParseFlags on a flag set of its own).
type Flags struct {
	Addr, Name                   string
	Redis, Cluster, Masters      string
	LockTTL, LockWait, Retry     time.Duration
	Wait                         lock.WaitMode
	RedisTimeout                 time.Duration
	Pool, RedisRetries           int
	Faults                       bool
	FaultKey                     string
	ClockSkew                    time.Duration
	ZooKeeper, Etcd              string
	Hosts                        []string
	Postgres, MySQL, SectionFile string
}

// ParseFlags defines the app's flags on fs, parses args and checks them:
// a usage error (bound.Usagef: exit 2) naming the flag or the stray word,
// before anything starts.
func ParseFlags(fs *flag.FlagSet, args []string) (Flags, error) {
	var f Flags
	fs.StringVar(&f.Addr, "addr", env("APP_ADDR", "127.0.0.1:8081"), "listen address [APP_ADDR]")
	fs.StringVar(&f.Name, "name", env("INSTANCE_NAME", ""), "instance name sent in X-Instance (default: the listen address) [INSTANCE_NAME]")
	fs.StringVar(&f.Redis, "redis", env("REDIS_ADDR", "127.0.0.1:6380"), "Redis address [REDIS_ADDR]")
	fs.StringVar(&f.Cluster, "redis-cluster", env("REDIS_CLUSTER", ""), "comma-separated nodes of a Redis Cluster to use instead of -redis (the stack's -cluster) [REDIS_CLUSTER]")
	fs.DurationVar(&f.LockTTL, "lock-ttl", 2*time.Second, "lease of the Redis locks")
	fs.DurationVar(&f.LockWait, "lock-wait", 5*time.Second, "how long a request waits for a lock before a 503")
	fs.DurationVar(&f.Retry, "retry", 10*time.Millisecond, "sleep between attempts to take a busy lock (-wait fixed)")
	wait := fs.String("wait", "", "how a request waits for a busy lock unless it says wait=: queue (the process's requests line up behind one contender, woken by the release), fixed (sleep -retry, the articles), backoff (exponential, jittered, 1ms to 32ms), notify (every request woken by the release, over pub/sub), relay (redlock: queue, and a section swaps its token for the next one's on the masters) or cohort (redlock: queue, and a section passes the lock on in memory while over half its validity is left); default: each lock's own (queue for the locks that poll and db-optimistic, relay for redlock)")
	fs.DurationVar(&f.RedisTimeout, "redis-timeout", time.Second, "dial, read and write timeout of each Redis call")
	fs.IntVar(&f.Pool, "pool", 64, "Redis connection pool size")
	fs.IntVar(&f.RedisRetries, "redis-retries", -1, "-1: a command that timed out is never resent (the app's setting); 3 is go-redis's default, which resends a timed-out EVALSHA: the retry trap")
	fs.StringVar(&f.Masters, "masters", env("REDLOCK_MASTERS", ""), "comma-separated independent Redis masters for redlock [REDLOCK_MASTERS]")
	fs.BoolVar(&f.Faults, "faults", false, "accept fault parameters (work=, fault=, pause=) on requests: for scenario runs only")
	fs.StringVar(&f.FaultKey, "fault-key", env("LOCKLADDER_FAULT_KEY", ""), "accept fault parameters only on requests that carry this key in X-Fault-Key (the stack hands its instances one, for its races; -faults: on every request) [LOCKLADDER_FAULT_KEY]")
	fs.DurationVar(&f.ClockSkew, "clock-skew", 0, "run this instance's lock clock ahead by this much (del-setnx and getset read it)")
	fs.StringVar(&f.ZooKeeper, "zookeeper", env("ZOOKEEPER_ADDR", ""), "ZooKeeper address [user:password@]host:port for the zookeeper and zk-lock rungs (digest auth; the stack passes it in the environment); its session timeout is -lock-ttl [ZOOKEEPER_ADDR]")
	fs.StringVar(&f.Etcd, "etcd", env("ETCD_URL", ""), "etcd client URL http://[user:password@]host:port for the etcd and etcd-mutex rungs (the stack passes it in the environment) [ETCD_URL]")
	hosts := fs.String("hosts", env("ALLOWED_HOSTS", ""), "comma-separated host names a request's Host may give besides loopback and -addr's host, e.g. nginx,app1 (any other: 421) [ALLOWED_HOSTS]")
	fs.StringVar(&f.Postgres, "postgres", env("POSTGRES_DSN", ""), "PostgreSQL DSN, e.g. postgres://lockladder:PASSWORD@127.0.0.1:5432/lockladder, for the pg-advisory rungs (the stack passes it in the environment) [POSTGRES_DSN]")
	fs.StringVar(&f.MySQL, "mysql", env("MYSQL_DSN", ""), "MariaDB DSN without a database, e.g. lockladder:PASSWORD@tcp(127.0.0.1:3306)/, for the db-for-update and db-optimistic rungs (the stack passes it in the environment, not on the command line) [MYSQL_DSN]")
	fs.StringVar(&f.SectionFile, "sections", "", "append the critical sections this instance holds to this file, and read back at start those its earlier processes held, so that a crash does not erase them (the stack gives each instance one in its run dir); default: in memory only")
	if err := fs.Parse(args); err != nil {
		return f, bound.Usage(err)
	}
	if fs.NArg() > 0 {
		return f, bound.Usagef("unexpected argument %q: every app flag starts with -", fs.Arg(0))
	}
	if f.Name == "" {
		f.Name = f.Addr
	}
	if err := bound.First(
		bound.Addr("addr", f.Addr),
		bound.Duration("lock-ttl", f.LockTTL, bound.MaxTimeout),
		bound.Duration("lock-wait", f.LockWait, bound.MaxTimeout),
		bound.Duration("retry", f.Retry, time.Minute),
		bound.Duration("redis-timeout", f.RedisTimeout, time.Minute),
		bound.IntIn("pool", f.Pool, 1, bound.MaxPool),
		bound.IntIn("redis-retries", f.RedisRetries, -1, 10),
		bound.DurationIn("clock-skew", f.ClockSkew, -bound.MaxTimeout, bound.MaxTimeout),
	); err != nil {
		return f, err
	}
	var err error
	if f.Hosts, err = origin.ParseHosts(*hosts); err != nil {
		return f, bound.Usagef("-hosts: %w", err)
	}
	if *wait != "" {
		if f.Wait, err = lock.ParseWaitMode(*wait); err != nil {
			return f, bound.Usagef("-wait: %w", err)
		}
	}
	return f, nil
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
