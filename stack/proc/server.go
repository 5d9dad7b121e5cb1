package proc

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Server is the shape of every kind of server the stack runs, each in a
// file of its own in package stack or a package of its own
// (stack/embedded, stack/faultproxy). A new kind is one more file
// implementing it, launched by Launch or in a Group.
//
// Start launches it (a process, or a listener in this process) without
// waiting for it to serve; Ready returns once it serves, or fails when it
// exited or ctx ended first; Stop stops whatever Start started (a process
// by its pid: SIGTERM, then SIGKILL after a grace period) and waits for
// it. Stop is safe after a failed Start or Ready.
type Server interface {
	Start(ctx context.Context) error
	Ready(ctx context.Context) error
	Stop() error
}

// Launch starts srv and waits until it is ready; when either fails it
// stops srv, so that nothing it started is left behind.
func Launch(ctx context.Context, srv Server) error {
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

// LaunchWithin is Launch with srv's wait to serve (Ready) bounded to d
// when ctx has no deadline of its own, counted from the moment its
// Start returned. The bound measures a wait for something that may
// never happen (a server that never answers), never the work of a
// start: PostgreSQL's initdb and MariaDB's install are a fixed amount of
// CPU that a loaded machine spreads over many seconds, and a timer that
// ran from the stack's first server would kill them half done (initdb
// under a loaded make test: "signal: killed"). That work ends with ctx.
func LaunchWithin(ctx context.Context, srv Server, d time.Duration) error {
	err := srv.Start(ctx)
	if err == nil {
		rctx, cancel := WithDefaultTimeout(ctx, d)
		err = srv.Ready(rctx)
		cancel()
	}
	if err != nil {
		srv.Stop()
		return err
	}
	return nil
}

// Group is servers launched together: each of Start, Ready and Stop runs
// on all of them at once and returns when all have, with their errors
// joined.
type Group []Server

func (g Group) Start(ctx context.Context) error {
	return Each(len(g), func(i int) error { return g[i].Start(ctx) })
}

func (g Group) Ready(ctx context.Context) error {
	return Each(len(g), func(i int) error { return g[i].Ready(ctx) })
}

func (g Group) Stop() error {
	return Each(len(g), func(i int) error { return g[i].Stop() })
}

// Each runs f(0) to f(n-1) at once and joins their errors.
func Each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
