package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	l, err := guard.Take(ctx, h.client, h.cfg.URL, h.cfg.owner())
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

// owner is the name the runs hold the guard under: Config.Owner, or
// this program's name and process id.
func (c Config) owner() string {
	if c.Owner != "" {
		return c.Owner
	}
	name := filepath.Base(os.Args[0])
	if len(name) > 48 {
		name = name[:48]
	}
	return fmt.Sprintf("%s (pid %d)", name, os.Getpid())
}
