package stack

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// server is the shape of every kind of server the stack runs, each in a
// file of its own: redis-server (redisserver.go), the embedded miniredis
// (package embedded) and the Redis over both (redis.go), the Redlock
// masters (masters.go), a sentinel (sentinel.go, its group in
// sentinelgroup.go), nginx (nginx.go), the built-in proxy (proxy.go), a
// fault proxy (package faultproxy), a supervised app instance (app.go). A
// new kind is one more file implementing it, launched by Start or a group
// of its own; its methods are exported, so that a kind in a package of
// its own fits the shape.
//
// start launches it (a process, or a listener in this process) without
// waiting for it to serve; ready returns once it serves, or fails when it
// exited or ctx ended first; stop stops whatever start started (a process
// by its pid: SIGTERM, then SIGKILL after a grace period) and waits for
// it. stop is safe after a failed start or ready.
type server interface {
	Start(ctx context.Context) error
	Ready(ctx context.Context) error
	Stop() error
}

// launch starts srv and waits until it is ready; when either fails it
// stops srv, so that nothing it started is left behind.
func launch(ctx context.Context, srv server) error {
	err := srv.Start(ctx)
	if err == nil {
		err = srv.Ready(ctx)
	}
	if err != nil {
		srv.Stop()
		return err
	}
	return nil
}

// group is servers launched together: each of start, ready and stop runs
// on all of them at once and returns when all have, with their errors
// joined.
type group []server

func (g group) Start(ctx context.Context) error {
	return each(len(g), func(i int) error { return g[i].Start(ctx) })
}

func (g group) Ready(ctx context.Context) error {
	return each(len(g), func(i int) error { return g[i].Ready(ctx) })
}

func (g group) Stop() error {
	return each(len(g), func(i int) error { return g[i].Stop() })
}

// each runs f(0) to f(n-1) at once and joins their errors.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadBalancer is the server in front of the instances: nginx (nginx.go)
// or the built-in proxy (proxy.go). Its ready returns once it routes to
// the instances (routesReady).
type loadBalancer interface {
	server
	Addr() string
	// pid is its process's, 0 when it serves in this process.
	Pid() int
	// setDown takes instance i out of the rotation (down) or puts it
	// back, and returns once the change is in effect (see Stack.Drain).
	setDown(ctx context.Context, i int, down bool) error
	summary() string
}

// routesReady sends one health check per instance through the load
// balancer at base: the built-in proxy's round robin sends each to
// another instance; nginx's workers each keep their own rotation, so
// there it is likely, not certain (the instances have each answered
// directly already). exited closes if the load balancer's process dies.
func routesReady(ctx context.Context, base string, instances int, exited <-chan struct{}) error {
	for range instances {
		if err := waitHealthy(ctx, base, exited); err != nil {
			return fmt.Errorf("stack: load balancer: %w", err)
		}
	}
	return nil
}
