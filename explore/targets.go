package explore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// Targets are the Redis rungs on one server, in ladder order, each with
// the faults of the scenario the ladder names for its flaw
// (docs/ladder.md), and made by the constructor lock.NewLadder calls.
var Targets = []Target{
	{Name: "setnx", New: lock.NewSetNX, Faults: Crash | Idle},
	{Name: "setnx-expire", New: lock.NewSetNXExpire, Faults: Crash | Idle},
	{Name: "setnx-px", New: lock.NewSetNXPX, Faults: Late},
	{Name: "check-del", New: lock.NewCheckDel, Faults: Late},
	{Name: "lua", New: lock.NewLua, Faults: Slow},
	{Name: "del-setnx", New: lock.NewDelSetNX, Faults: Crash | Idle, Clocks: true},
	{Name: "getset", New: lock.NewGetSet, Faults: Skew | Idle, Clocks: true},
	{Name: "reentrant", New: lock.NewReentrant, Faults: Pause | Idle},
	{Name: "fenced", New: lock.NewFenced, Faults: Crash | Pause | Slow},
	{Name: "fair", New: func(rdb redis.Cmdable, o lock.Options) lock.Locker { return lock.NewFair(rdb, o) }, Faults: Crash | Pause | Slow},
}

// Lookup returns the target called name.
func Lookup(name string) (Target, error) {
	var names []string
	for _, t := range Targets {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return Target{}, fmt.Errorf("explore: no rung %q to explore (valid: %s)", name, strings.Join(names, ", "))
}

// Target is a rung as the explorer runs it.
type Target struct {
	Name string
	// New makes the rung's Locker, with the constructor the app's ladder
	// uses (lock.NewLadder).
	New func(redis.Cmdable, lock.Options) lock.Locker
	// Faults are the scenario the ladder names for the rung's flaw.
	Faults Faults
	// Clocks: the rung reads clocks (Options.Clock), so skew applies.
	Clocks bool
	// Business is the critical section, sending its commands down rdb
	// (or through s, the app's store over rdb); nil is the app's sale
	// (Sale).
	Business func(ctx context.Context, rdb redis.Cmdable, s *inventory.Store, l lock.Lock) error
}

func (t Target) business() func(context.Context, redis.Cmdable, *inventory.Store, lock.Lock) error {
	if t.Business != nil {
		return t.Business
	}
	return Sale
}
