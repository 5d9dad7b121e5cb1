package engine

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the engine runs: a lock as one client holds it, whatever its
// code, and the business it guards. The lab's rungs (package lock) and
// a lock of the engineer's own are both adapted to these.

// ErrNotObtained is what a Locker's Obtain returns (or wraps) when
// another client holds the lock.
var ErrNotObtained = errors.New("lock not obtained: another client holds it")

// Locker is a lock under search, as one client holds it. The search
// makes one for each client of each schedule (Target.New), so it may
// keep state.
type Locker interface {
	// Obtain takes key: it returns the held lock, or an error wrapping
	// ErrNotObtained when another client holds key. It may make one
	// attempt (the search decides when the client tries again) or wait
	// and retry on its own, on any clock (in a bubble the clock is the
	// search's). Any other error is the lock's failure.
	Obtain(ctx context.Context, key string) (Held, error)
}

// Held is a lock a client holds. Release gives it up; its error (the
// lease had lapsed, say) is the lock's business, not a verdict.
type Held interface {
	Release(ctx context.Context) error
}

// Ticker paces a renewal loop (a watchdog) on the search's clock: Wait
// returns true at the next tick, false once ctx ends; Stop ends it. A
// paused client's tickers are frozen with it.
type Ticker interface {
	Wait(ctx context.Context) bool
	Stop()
}

// Env is what a client's lock gets from the search besides its Redis
// connection.
type Env struct {
	// TTL is the lease to take (Config.TTL, default 2s).
	TTL time.Duration
	// Now is the client's clock: the search's virtual time, run ahead
	// for a client whose clock is skewed.
	Now func() time.Time
	// NewTicker makes a ticker on the search's time, for a renewal loop:
	// it ticks when the search lets time pass, and not while its client
	// is paused.
	NewTicker func(every time.Duration) Ticker
	// After is the timer for a wait between two tries: the waiter that
	// sleeps on its channel tries again when the search delivers it.
	After func(d time.Duration) <-chan time.Time
}

// RoundWatch hears a lock on masters say where its rounds are (the
// lab's Redlock: lock.RoundWatch, rounds.go).
type RoundWatch interface {
	Begin(asked, after []bool)
	Wait(taken int)
}

// Business is what each client does while it holds the lock, and what
// is read back after every step to judge it.
type Business struct {
	// Init are the keys' values every world starts with.
	Init map[string]string
	// Keys are read back after every step (directly, not through a
	// gate): Judge judges them, the diagram shows them.
	Keys []string
	// Names are what the diagram calls Keys (default the keys).
	Names []string
	// Run is one client's section, under the lock: its commands go down
	// rdb, each held at the client's gate until the search delivers it.
	// Its error (a write refused for a stale token) is the section's own:
	// Judge says whether the data went wrong.
	Run func(ctx context.Context, rdb redis.UniversalClient, held Held) error
	// Judge says what is wrong with Keys' values (a missing key's is ""),
	// or nil.
	Judge func(values []string) error
	// Show is Keys' values in the diagram (default: joined with "/", a
	// missing key "-").
	Show func(values []string) string
	// Note says what a step did to Keys, for the diagram ("sold one"), or
	// "".
	Note func(before, after []string) string
}

// names are b's Keys as the diagram calls them.
func (b Business) names() []string {
	if len(b.Names) == len(b.Keys) {
		return b.Names
	}
	return b.Keys
}

// Target is a lock as the engine runs it.
type Target struct {
	Name string
	// New makes one client's Locker over rdb, that client's connection
	// to the search's Redis.
	New func(rdb redis.UniversalClient, env Env) Locker
	// Masters, for a lock on independent masters (Redlock), is how many,
	// and NewMasters makes it over them; New is then nil.
	Masters    int
	NewMasters func(masters []redis.UniversalClient, env Env) Locker
	// Watch gives a client's context the RoundWatch its lock on masters
	// reports its rounds to (rounds.go); nil: none.
	Watch func(ctx context.Context, w RoundWatch) context.Context
	// WaitsAll: a library on masters whose every call asks each master
	// and waits for every answer (redsync), its rounds known from the
	// commands at the gates, not reported (rounds.go).
	WaitsAll bool
	// MaxClients, when positive, caps Config.MaxClients.
	MaxClients int
	// Faults are the scenario searched unless Config.Faults says.
	Faults Faults
	// Clocks: the lock reads clocks (Env.Now), so skew applies.
	Clocks bool
	// Line: B is a request of A's process, waiting in its line (line.go).
	Line bool
	// Unexplored says what of the lock the search does not run ("":
	// nothing); what it covered says so.
	Unexplored string
	// Key is the lock's key (default "lock").
	Key string
	// Business is each client's section and what is judged (default
	// Sale).
	Business *Business
	// Display are pairs of (text, name) the diagram shortens: a key to
	// its short name.
	Display []string
	// Scripts name the Lua scripts the diagram shows, by the start of
	// their source.
	Scripts []ScriptName
	// Tokens: the lock's tokens are not UUIDs (a library's random
	// strings): learn them from the commands (tokens.go).
	Tokens bool
	// WallDeadlines: the lock gives each call to Redis a wall-clock
	// deadline of its own (redsync: 5% of the expiry); the gate holds it
	// off, as for WaitsAll (gate.go).
	WallDeadlines bool
	// Strict: an Obtain that fails other than busy, or panics, fails the
	// search (a lock under check); else the client gives up (a rung
	// whose Obtain ends with the world).
	Strict bool
	// ReplayTTL, when positive, is the lease of a replay unless the
	// Replayer sets one.
	ReplayTTL time.Duration
}

// ScriptName names a Lua script by the start of its source, and says
// what it does in words for a game's moves (Says; "" for nothing).
type ScriptName struct{ Prefix, Name, Says string }

func (t Target) key() string {
	if t.Key == "" {
		return "lock"
	}
	return t.Key
}

func (t Target) business() *Business {
	if t.Business != nil {
		return t.Business
	}
	return &saleBusiness
}

// CheckError is an error of a section that fails the search instead of
// being the section's own (a held lock that lost the fencing token its
// Lock declared).
type CheckError struct{ Err error }

func (e *CheckError) Error() string { return e.Err.Error() }
func (e *CheckError) Unwrap() error { return e.Err }
