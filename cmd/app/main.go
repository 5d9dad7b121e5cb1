// Command app is one instance of the lab's web app: /sale and /testLock
// under a lock chosen per request, over a shared Redis.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/appwire"
	"github.com/lockladder/lockladder/internal/bound"
	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

func main() {
	handlers.ResumeIfAsked() // this binary also resumes itself after fault=pause
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(bound.ExitCode(err)) // 2: a flag refused before anything started
	}
}

func run() error {
	var (
		addr         = flag.String("addr", env("APP_ADDR", "127.0.0.1:8081"), "listen address [APP_ADDR]")
		name         = flag.String("name", env("INSTANCE_NAME", ""), "instance name sent in X-Instance (default: the listen address) [INSTANCE_NAME]")
		redisAddr    = flag.String("redis", env("REDIS_ADDR", "127.0.0.1:6380"), "Redis address [REDIS_ADDR]")
		clusterAddrs = flag.String("redis-cluster", env("REDIS_CLUSTER", ""), "comma-separated nodes of a Redis Cluster to use instead of -redis (the stack's -cluster) [REDIS_CLUSTER]")
		lockTTL      = flag.Duration("lock-ttl", 2*time.Second, "lease of the Redis locks")
		lockWait     = flag.Duration("lock-wait", 5*time.Second, "how long a request waits for a lock before a 503")
		retry        = flag.Duration("retry", 10*time.Millisecond, "sleep between attempts to take a busy lock (-wait fixed)")
		wait         = flag.String("wait", "", "how a request waits for a busy lock unless it says wait=: queue (the process's requests line up behind one contender, woken by the release), fixed (sleep -retry, the articles), backoff (exponential, jittered, 1ms to 32ms), notify (every request woken by the release, over pub/sub), relay (redlock: queue, and a section swaps its token for the next one's on the masters) or cohort (redlock: queue, and a section passes the lock on in memory while over half its validity is left); default: each lock's own (queue for the locks that poll and db-optimistic, relay for redlock)")
		redisTimeout = flag.Duration("redis-timeout", time.Second, "dial, read and write timeout of each Redis call")
		pool         = flag.Int("pool", 64, "Redis connection pool size")
		redisRetries = flag.Int("redis-retries", -1, "-1: a command that timed out is never resent (the app's setting); 3 is go-redis's default, which resends a timed-out EVALSHA: the retry trap")
		masters      = flag.String("masters", env("REDLOCK_MASTERS", ""), "comma-separated independent Redis masters for redlock [REDLOCK_MASTERS]")
		faults       = flag.Bool("faults", false, "accept fault parameters (work=, fault=, pause=) on requests: for scenario runs only")
		faultKey     = flag.String("fault-key", env("LOCKLADDER_FAULT_KEY", ""), "accept fault parameters only on requests that carry this key in X-Fault-Key (the stack hands its instances one, for its races; -faults: on every request) [LOCKLADDER_FAULT_KEY]")
		clockSkew    = flag.Duration("clock-skew", 0, "run this instance's lock clock ahead by this much (del-setnx and getset read it)")
		zkAddr       = flag.String("zookeeper", env("ZOOKEEPER_ADDR", ""), "ZooKeeper address host:port for the zookeeper rung; its session timeout is -lock-ttl [ZOOKEEPER_ADDR]")
		etcdURL      = flag.String("etcd", env("ETCD_URL", ""), "etcd client URL for the etcd rung [ETCD_URL]")
		hosts        = flag.String("hosts", env("ALLOWED_HOSTS", ""), "comma-separated host names a request's Host may give besides loopback and -addr's host, e.g. nginx,app1 (any other: 421) [ALLOWED_HOSTS]")
		pgDSN        = flag.String("postgres", env("POSTGRES_DSN", ""), "PostgreSQL DSN, e.g. postgres://lockladder:PASSWORD@127.0.0.1:5432/lockladder, for the pg-advisory rungs (the stack passes it in the environment) [POSTGRES_DSN]")
		mysqlDSN     = flag.String("mysql", env("MYSQL_DSN", ""), "MariaDB DSN without a database, e.g. lockladder:PASSWORD@tcp(127.0.0.1:3306)/, for the db-for-update and db-optimistic rungs (the stack passes it in the environment, not on the command line) [MYSQL_DSN]")
	)
	sectionsFile := flag.String("sections", "", "append the critical sections this instance holds to this file, and read back at start those its earlier processes held, so that a crash does not erase them (the stack gives each instance one in its run dir); default: in memory only")
	flag.Parse()
	if flag.NArg() > 0 {
		return bound.Usagef("unexpected arguments %q", flag.Args())
	}
	if *name == "" {
		*name = *addr
	}
	if err := bound.First(
		bound.Addr("addr", *addr),
		bound.Duration("lock-ttl", *lockTTL, bound.MaxTimeout),
		bound.Duration("lock-wait", *lockWait, bound.MaxTimeout),
		bound.Duration("retry", *retry, time.Minute),
		bound.Duration("redis-timeout", *redisTimeout, time.Minute),
		bound.IntIn("pool", *pool, 1, bound.MaxPool),
		bound.IntIn("redis-retries", *redisRetries, -1, 10),
		bound.DurationIn("clock-skew", *clockSkew, -bound.MaxTimeout, bound.MaxTimeout),
	); err != nil {
		return err
	}
	allowed, err := origin.ParseHosts(*hosts)
	if err != nil {
		return bound.Usagef("-hosts: %w", err)
	}
	var waitMode lock.WaitMode
	if *wait != "" {
		m, err := lock.ParseWaitMode(*wait)
		if err != nil {
			return bound.Usagef("-wait: %w", err)
		}
		waitMode = m
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("instance", *name)

	clients := appwire.Connect(appwire.Servers{
		Redis: *redisAddr, Cluster: *clusterAddrs, Masters: *masters,
		ZooKeeper: *zkAddr, Etcd: *etcdURL, MySQL: *mysqlDSN, Postgres: *pgDSN, Password: os.Getenv(appwire.PasswordEnv),
		Timeout: *redisTimeout, Pool: *pool, Retries: *redisRetries, Lease: *lockTTL, Wait: *lockWait,
	}, log)
	defer clients.Close()
	opts := lock.Options{TTL: *lockTTL, Wait: *lockWait, WaitMode: waitMode, Retry: lock.FixedSleep(*retry), Notifier: clients.Notifier}
	if *clockSkew != 0 {
		skew := *clockSkew
		opts.Clock = func() time.Time { return time.Now().Add(skew) }
	}
	var faultActions *handlers.FaultActions
	if *faults || *faultKey != "" {
		faultActions = &handlers.FaultActions{}
	}
	if *faults {
		*faultKey = "" // every request may
	}

	gin.SetMode(gin.ReleaseMode)
	cfg := handlers.Config{
		Instance:  *name,
		Addr:      *addr,
		Hosts:     allowed,
		Inventory: inventory.New(clients.Redis),
		Redis:     clients.Redis, // the run guard, the count of items
		Ladder:    ladder.New(clients.Backends, opts, clients.Redlock),
		Log:       log,
		Faults:    faultActions,
		FaultKey:  *faultKey,
		RunKey:    os.Getenv(appwire.PasswordEnv), // the stack's runs show it to take the run guard
	}
	if *sectionsFile != "" {
		rec, err := contract.OpenRecorder(1<<16, *sectionsFile)
		if err != nil {
			return err
		}
		defer rec.Close()
		cfg.Sections = rec
	}
	if clients.Optimistic != nil { // a nil *DBStore in the interface would not be nil
		cfg.Optimistic = clients.Optimistic
	}
	router := handlers.New(cfg)
	srv := httplimit.Bound(&http.Server{
		Addr:         *addr,
		Handler:      router,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: *lockWait + 30*time.Second,
		IdleTimeout:  90 * time.Second,
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	// net/http's own refusals as JSON; no bound per client: the load
	// balancer is its one client.
	go func() { errc <- srv.Serve(httplimit.Listen(ln, 0)) }()
	log.Info("serving", "addr", *addr, "redis", clients.Where, "masters", len(clients.Backends.Masters),
		"redis_retries", *redisRetries, "lock_ttl", *lockTTL, "lock_wait", *lockWait, "wait", waitMode, "faults", *faults, "fault_key", *faultKey != "", "clock_skew", *clockSkew)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *lockWait+10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
