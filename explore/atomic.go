package explore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
)

// atomicTarget is the ceiling (ladder.New's "atomic", which has no
// Locker): no lock at all, the sale one script Redis runs whole
// (inventory.Store.SellAtomic, as handlers.critical sells under it). The
// explorer still runs each client's Obtain and Release, which do nothing
// and send nothing, so that its faults (a crash, a pause, a slow section)
// fall where they fall for the other rungs.
var atomicTarget = Target{
	Name:     "atomic",
	New:      func(redis.UniversalClient, Env) Locker { return noLock{} },
	Faults:   Crash | Pause | Slow,
	Business: &atomicSale,
}

// atomicSale is the app's sale as one script.
var atomicSale = func() Business {
	b := labSale
	b.Run = func(ctx context.Context, rdb redis.UniversalClient, _ Held) error {
		_, err := inventory.New(rdb).SellAtomic(ctx)
		return err
	}
	return b
}()

// noLock is the atomic rung's Locker: every Obtain holds at once.
type noLock struct{}

func (noLock) Obtain(context.Context, string) (Held, error) { return noLock{}, nil }
func (noLock) Release(context.Context) error                { return nil }
