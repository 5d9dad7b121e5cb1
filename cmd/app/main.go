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
	f, err := appwire.ParseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("instance", f.Name)

	clients := appwire.Connect(appwire.Servers{
		Redis: f.Redis, Cluster: f.Cluster, Masters: f.Masters,
		ZooKeeper: f.ZooKeeper, Etcd: f.Etcd, MySQL: f.MySQL, Postgres: f.Postgres, Password: os.Getenv(appwire.PasswordEnv),
		Timeout: f.RedisTimeout, Pool: f.Pool, Retries: f.RedisRetries, Lease: f.LockTTL, Wait: f.LockWait,
	}, log)
	defer clients.Close()
	opts := lock.Options{TTL: f.LockTTL, Wait: f.LockWait, WaitMode: f.Wait, Retry: lock.FixedSleep(f.Retry), Notifier: clients.Notifier}
	if f.ClockSkew != 0 {
		skew := f.ClockSkew
		opts.Clock = func() time.Time { return time.Now().Add(skew) }
	}
	var faultActions *handlers.FaultActions
	if f.Faults || f.FaultKey != "" {
		faultActions = &handlers.FaultActions{}
	}
	if f.Faults {
		f.FaultKey = "" // every request may
	}

	gin.SetMode(gin.ReleaseMode)
	cfg := handlers.Config{
		Instance:  f.Name,
		Addr:      f.Addr,
		Hosts:     f.Hosts,
		Inventory: inventory.New(clients.Redis),
		Redis:     clients.Redis, // the run guard, the count of items
		Ladder:    ladder.New(clients.Backends, opts, clients.Redlock),
		Log:       log,
		Faults:    faultActions,
		FaultKey:  f.FaultKey,
		RunKey:    os.Getenv(appwire.PasswordEnv), // the stack's runs show it to take the run guard
	}
	if f.SectionFile != "" {
		rec, err := contract.OpenRecorder(1<<16, f.SectionFile)
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
		Addr:         f.Addr,
		Handler:      router,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: f.LockWait + 30*time.Second,
		IdleTimeout:  90 * time.Second,
	})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return err
	}
	// net/http's own refusals as JSON; no bound per client: the load
	// balancer is its one client.
	go func() { errc <- srv.Serve(httplimit.Listen(ln, 0)) }()
	log.Info("serving", "addr", f.Addr, "redis", clients.Where, "masters", len(clients.Backends.Masters),
		"redis_retries", f.RedisRetries, "lock_ttl", f.LockTTL, "lock_wait", f.LockWait, "wait", f.Wait, "faults", f.Faults, "fault_key", f.FaultKey != "", "clock_skew", f.ClockSkew)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), f.LockWait+10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
