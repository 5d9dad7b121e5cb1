package explore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lockcheck/engine"
)

// The lab's rungs as the engine runs them: each Locker (package lock)
// adapted to the engine's Locker, one attempt an Obtain (the search
// decides when a client tries again), its Options' clock, tickers and
// timers the search's; the app's sale (inventory.Store) under it, on the
// app's keys.

func init() {
	// The adapter's frames are no rung's call site.
	engine.SkipCallers(reflect.TypeFor[rungLocker]().PkgPath())
}

// rung adapts a rung's constructor, as ladder.New calls it, with each
// Obtain making one attempt.
func rung(newFn func(redis.Cmdable, lock.Options) lock.Locker) func(redis.UniversalClient, Env) Locker {
	return rungCall(newFn, lock.Call{Try: new(time.Duration)})
}

// rungCall adapts a rung's constructor, each Obtain with call.
func rungCall(newFn func(redis.Cmdable, lock.Options) lock.Locker, call lock.Call) func(redis.UniversalClient, Env) Locker {
	return func(rdb redis.UniversalClient, env Env) Locker {
		return rungLocker{newFn(rdb, options(env)), call}
	}
}

// rungMasters adapts a rung on masters, each Obtain with call.
func rungMasters(newFn func([]redis.Cmdable, lock.Options) lock.Locker, call lock.Call) func([]redis.UniversalClient, Env) Locker {
	return func(masters []redis.UniversalClient, env Env) Locker {
		cmdables := make([]redis.Cmdable, len(masters))
		for i, m := range masters {
			cmdables[i] = m
		}
		return rungLocker{newFn(cmdables, options(env)), call}
	}
}

// options are a rung's Options on the search's time.
func options(env Env) lock.Options {
	return lock.Options{TTL: env.TTL, Clock: env.Now, After: env.After,
		Ticker: func(every time.Duration) lock.Ticker { return env.NewTicker(every) }}
}

// rungLocker is a rung as the engine's Locker: busy is the engine's
// ErrNotObtained, and the lock it hands the section is the rung's own
// (its fencing token, for the sale).
type rungLocker struct {
	l    lock.Locker
	call lock.Call
}

func (r rungLocker) Obtain(ctx context.Context, key string) (Held, error) {
	l, err := r.l.Obtain(ctx, key, r.call)
	if errors.Is(err, lock.ErrNotObtained) {
		return nil, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Waiting is how many requests wait in the rung's line for key (a
// cohort's: line.go), 0 for a rung without one.
func (r rungLocker) Waiting(key string) int {
	if w, ok := r.l.(interface{ Waiting(string) int }); ok {
		return w.Waiting(key)
	}
	return 0
}

// watchRounds hands the lab's Redlock the engine's RoundWatch.
func watchRounds(ctx context.Context, w RoundWatch) context.Context {
	return lock.WithRoundWatch(ctx, w)
}

// Sale is the app's business under a lock (handlers.critical): the
// fenced sale with the lock's fencing token when it has one, else the
// articles' GET, check, SET.
func Sale(ctx context.Context, rdb redis.UniversalClient, held Held) error {
	var g inventory.Guard
	if t, ok := held.(lock.Tokened); ok {
		g.Token = t.Token()
	}
	_, err := inventory.New(rdb).Sell(ctx, g)
	return err
}

// labSale is the app's sale as the engine runs it, on the app's keys.
var labSale = Business{
	Init:  map[string]string{inventory.KeyStock: fmt.Sprint(engine.InitialStock)},
	Keys:  []string{inventory.KeyStock, inventory.KeySold},
	Names: []string{"stock", "sold"},
	Run:   Sale, Judge: engine.SaleJudge(engine.InitialStock), Show: engine.ShowCounts, Note: engine.SaleNote,
}

// labDisplay are the app's keys' short names in the diagram.
var labDisplay = []string{
	inventory.StockFence, "fence:max", inventory.StockLock + ":fence", "fence",
	inventory.StockLock + ":queue:live", "queue:live", inventory.StockLock + ":queue", "queue",
	inventory.StockLock, "lock", inventory.KeyStock, "stock", inventory.KeySold, "sold",
}

// lab is t as the lab runs it: on the app's lock key and its sale (t's
// own Business kept), drawn with the app's short names.
func lab(t Target) Target {
	t.Key = inventory.StockLock
	if t.Business == nil {
		b := labSale
		t.Business = &b
	}
	t.Display, t.Scripts = labDisplay, labScripts
	return t
}

// labTargets are ts as the lab runs them (lab).
func labTargets(ts ...Target) []Target {
	for i := range ts {
		ts[i] = lab(ts[i])
	}
	return ts
}

// waitInLineCall is the call of a request in a cohort's world: it waits
// in its process's line with a bound the search never reaches (line.go).
var waitInLineCall = lock.Call{Try: func() *time.Duration { d := engine.WaitInLine; return &d }()}

// noNodeTimeout is the per-master timeout the explorer gives Redlock: it
// never fires, so that whether a master answers in time is the search's
// choice (its order of delivery), not the machine's speed.
const noNodeTimeout = time.Hour

func newRedlock(masters []redis.Cmdable, o lock.Options) lock.Locker {
	return speed.RedlockLine(lock.NewRedlock(masters, o, lock.RedlockOptions{NodeTimeout: noNodeTimeout}))
}

// labScripts name the lab's scripts by the first words of their opening
// comment, and say what each does for the game's moves.
var labScripts = []engine.ScriptName{
	{Prefix: "-- Release a lock only if we still own it", Name: "lua-release",
		Says: "delete the lock only if it is still its own, in one step"},
	{Prefix: "-- Take a reentrant lock", Name: "reentrant-acquire",
		Says: "take the lock, or enter it again as its owner"},
	{Prefix: "-- Leave a reentrant lock", Name: "reentrant-release",
		Says: "leave the lock once; free it at the owner's last leave"},
	{Prefix: "-- Renew a reentrant lock", Name: "reentrant-renew",
		Says: "extend the lease while it still owns the lock"},
	{Prefix: "-- Take a lease and hand out the next fencing token", Name: "fenced-acquire",
		Says: "take the lease and the next fencing token"},
	{Prefix: "-- Take a fair lock", Name: "fair-acquire",
		Says: "take the lock, or queue for it"},
	{Prefix: "-- Release a fair lock", Name: "fair-release",
		Says: "hand the lock to the oldest live waiter"},
	{Prefix: "-- Renew a lease, only while", Name: "fair-renew",
		Says: "extend the lease while it still holds the lock"},
	{Prefix: "-- Read a value under a fencing token", Name: "fenced-read",
		Says: "read the stock and note its token as the highest: refused if a higher one was seen"},
	{Prefix: "-- Write a value under a fencing token", Name: "fenced-write",
		Says: "write the stock under its token: refused if a higher one was seen"},
	{Prefix: "-- Sell one item in one atomic step", Name: "sell-atomic",
		Says: "sell one item in one step"},
	// The libraries' (Libraries), by their own source.
	{Prefix: "\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3])", Name: "redislock-obtain"},
	{Prefix: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`, Name: "redislock-refresh"},
	{Prefix: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`, Name: "redislock-release"},
	{Prefix: "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\"", Name: "redsync-delete"},
}
