package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockladder/lockladder/guard"
)

// hold takes the stack's run guard (package guard) through the load
// balancer for the harness's runs, before their first reset, unless the
// caller holds one already (Config.Guard). Another run holding it is an
// error that names it (errors.Is guard.ErrBusy). An app that serves no
// guard refuses no reset either: the runs go on without one.
func (h *harness) hold(ctx context.Context) error {
	if h.cfg.Guard != nil {
		h.lease = h.cfg.Guard
		return nil
	}
	l, err := guard.Take(ctx, h.client, h.cfg.URL, h.cfg.RunKey, h.cfg.Run)
	switch {
	case errors.Is(err, guard.ErrNotServed):
		return nil
	case err != nil:
		return fmt.Errorf("bench: %w", err)
	}
	h.lease, h.ownLease = l, true
	return nil
}

// letGo releases a guard hold took.
func (h *harness) letGo() {
	if !h.ownLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.lease.Release(ctx) // if it fails, the guard expires on its own
	h.ownLease = false
}

// guardLost is nil unless the guard was lost during the runs: it
// expired (its renewals did not get through) and another run took it,
// whose resets may be in what a run read back since.
func (h *harness) guardLost() error { return h.lease.Err() }

// keyOf is the run key top holds (*stack.Stack's Redis password), ""
// when it has none.
func keyOf(top Topology) string {
	if k, ok := top.(interface{ RedisPassword() string }); ok {
		return k.RedisPassword()
	}
	return ""
}
