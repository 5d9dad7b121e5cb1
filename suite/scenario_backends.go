package suite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// backendControl is what backendRestart needs of a stack: the back ends
// it runs (ZooKeeper, MariaDB, etcd), stopped and started again on the
// same address with the same data (*stack.Stack has it).
type backendControl interface {
	Backends() []string
	StopBackend(kind string) error
	StartBackend(kind string) error
}

// backendDowntime is how long backendRestart keeps the back ends down.
const backendDowntime = time.Second

// backendRestart: the servers of the other back ends' rungs stop a third
// of the way in and start again a second later. Requests in between fail
// with 503 and change nothing; the sessions, leases and rows come back
// with the servers' data, the clients in the instances reconnect, and no
// lock is granted twice.
func backendRestart() Scenario {
	each := func(t Stack, verb string, act func(backendControl, string) error) error {
		bc, ok := t.(backendControl)
		if !ok {
			return errors.New("the stack has no back ends to " + verb)
		}
		var errs []error
		for _, kind := range bc.Backends() {
			if err := act(bc, kind); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", verb, kind, err))
			}
		}
		return errors.Join(errs...)
	}
	start := func(ctx context.Context, t Stack) error {
		return each(t, "start", backendControl.StartBackend)
	}
	return Scenario{
		Name:    "backend-restart",
		About:   fmt.Sprintf("ZooKeeper, etcd, MariaDB and PostgreSQL stopped a third of the way in and started again %s later, their data kept; wait 1s", backendDowntime),
		AppArgs: []string{"-lock-wait", "1s"},
		Hooks: []Hook{{
			At:    1.0 / 3,
			About: fmt.Sprintf("stop the back ends for %s", backendDowntime),
			// The fault counts (the stall is measured) from the stop.
			Do: func(ctx context.Context, t Stack) error {
				return each(t, "stop", backendControl.StopBackend)
			},
			Then: func(ctx context.Context, t Stack) error {
				select {
				case <-time.After(backendDowntime):
				case <-ctx.Done():
				}
				return start(ctx, t)
			},
			Undo: start,
		}},
		// A server that never comes back, or a client that never
		// reconnects, stalls its rung for good: DEADLOCK.
		StallBound: 15 * time.Second,
		Expect: map[string]string{
			"zookeeper": safe, "etcd": safe, "db-optimistic": safe,
			"etcd-mutex": safe,
			// Measured (docs/libraries.md): 235 sales, then a 15s
			// stall, in both runs. go-zookeeper's Unlock is one Delete:
			// one that fails while ZooKeeper is down leaves the znode,
			// and the session, back with the server, keeps it first in
			// line for good. The lab's zookeeper rung deletes until the
			// znode is gone.
			"zk-lock": deadlock,
			// The stack stops the databases as a crash would (each
			// Stop says why): nobody can take a lock until the server
			// is back, by when the holder's short section has ended.
			"pg-advisory": safe, "pg-advisory-xact": safe, "pg-advisory-fenced": safe,
			"db-for-update": safe,
		},
		SkipOther: "only the other back ends' rungs use these servers (Redis stopped under load is in make chaos)",
	}
}
