// Package lockcheck checks a Redis lock of your own, from a test: it
// runs the lock's own code in two and then three clients against an
// in-process Redis, holds every command a client sends at a gate, and
// searches the orders in which they can reach Redis, with crashes,
// pauses, a clock running ahead and time passing as choices (and, asked
// for by name, a lost reply or a cancelled context: Faults), for the
// shortest schedule that breaks what the lock guards. It fails the test
// with that schedule drawn as a sequence diagram, replayed on a real
// redis-server, and printed as a token that replays it anywhere
// (Replay); or it passes and says what it covered.
//
//	func TestMyLock(t *testing.T) {
//		lockcheck.Check(t, lockcheck.Lock{
//			Name: "mylock",
//			New: func(rdb redis.UniversalClient, env lockcheck.Env) lockcheck.Locker {
//				return myAdapter{mylock.New(rdb, env.TTL)}
//			},
//		}, lockcheck.Config{})
//	}
//
// The search runs in a testing/synctest bubble: time is the search's
// whatever the lock calls (time.Now, time.Sleep, time.After, tickers,
// context deadlines), so a lock that waits and retries on its own, or
// reads the wall clock, is searched like any other. What the search
// cannot drive it says, and fails the check rather than give a verdict:
// an Obtain that fails other than busy or panics, a schedule that runs
// differently twice, a goroutine blocked on something outside the test
// (a real network connection, a mutex made elsewhere).
//
// By default each client takes the lock and sells one item under it
// (GET stock, then SET stock-1 and INCR sold): two clients that sell at
// once leave a sale the stock does not show (OVERSOLD). A Section of
// your own checks your own business and keys instead. A lock whose live
// clients can never take it again once one has died holding it is a
// DEADLOCK; once a cancelled Obtain or Release left its key (Cancel), it
// is LEAKED.
package lockcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lockcheck/engine"
)

// ErrNotObtained is what a Locker's Obtain returns, or wraps, when
// another client holds the lock.
var ErrNotObtained = engine.ErrNotObtained

// Locker is the lock under check, as one client holds it. The check
// makes one for each client of each schedule (Lock.New), so it may keep
// state.
type Locker interface {
	// Obtain takes key. It returns the held lock, or an error wrapping
	// ErrNotObtained when another client holds key. It may make one
	// attempt (the check then decides when the client tries again) or
	// wait and retry on its own, on any clock. Any other error fails the
	// check: Redis answers every command it is sent. (Under Cancel, an
	// error once ctx is cancelled ends the client instead, as a request
	// that gave up does.)
	Obtain(ctx context.Context, key string) (Held, error)
}

// Held is a lock a client holds. Release gives it up; its error (the
// lease had lapsed, say) is the lock's business, not a verdict.
type Held interface {
	Release(ctx context.Context) error
}

// Fenced is a held lock with a fencing token: positive, larger at every
// acquisition. A Lock declared Fenced must hand out only such.
type Fenced interface {
	Held
	Token() int64
}

// Ticker paces a renewal loop on the check's clock, frozen while its
// client is paused (Env.NewTicker). A lock may use time.NewTicker
// instead: it ticks on the check's clock too, but a pause does not
// freeze it (its renewal waits at the gate until the pause ends).
type Ticker interface {
	Wait(ctx context.Context) bool
	Stop()
}

// Env is what a client's lock gets from the check besides its Redis
// connection.
type Env struct {
	// TTL is the lease to take (Config.TTL, default 2s).
	TTL time.Duration
	// Now is the client's clock: the check's time, run ahead for a client
	// whose clock is skewed. time.Now reads the check's time too, but
	// one clock for every client: the skew fault reaches a lock only
	// through Now.
	Now func() time.Time
	// NewTicker makes a ticker for a renewal loop, frozen while its
	// client is paused.
	NewTicker func(every time.Duration) Ticker
}

// Lock is a lock to check.
type Lock struct {
	// Name names the lock in the report. Default "lock".
	Name string
	// New makes one client's Locker over rdb, that client's connection
	// to the check's Redis: every command it sends waits at a gate until
	// the search delivers it. The key the client locks is given to
	// Obtain; the lock may use other keys of its own.
	New func(rdb redis.UniversalClient, env Env) Locker
	// Fenced declares that every held lock carries a fencing token
	// (Fenced's Token): the sale's reads and writes then carry it, and a
	// held lock without one fails the check (a wrapper that dropped the
	// method, say) instead of being judged unfenced.
	Fenced bool
	// Section is the business under the lock (nil: the sale).
	Section *Section
}

// Section is the engineer's own business under the lock, and what must
// hold of the keys it writes.
type Section struct {
	// Init are the keys' values before any client runs.
	Init map[string]string
	// Keys are read back after every step (directly, not through the
	// gate), for Invariant and the diagram.
	Keys []string
	// Run is one client's section: held is what its Obtain returned (its
	// Token, for a fenced write), and each command sent down rdb waits at
	// the client's gate. Its error (a write refused for a stale token) is
	// the section's own: Invariant judges the data.
	Run func(ctx context.Context, rdb redis.UniversalClient, held Held) error
	// Invariant says what is wrong with Keys' values (values[k], "" for a
	// missing key), or nil. The check fails with the first schedule that
	// makes it say something.
	Invariant func(values map[string]string) error
}

// target is l as the engine runs it, under faults.
func (l Lock) target(faults engine.Faults) (engine.Target, error) {
	if l.New == nil {
		return engine.Target{}, errors.New("lockcheck: Lock.New is nil")
	}
	name := cmp.Or(l.Name, "lock")
	t := engine.Target{Name: name, Faults: faults, Clocks: true, Tokens: true, Strict: true,
		New: func(rdb redis.UniversalClient, env engine.Env) engine.Locker {
			return locker{l.New(rdb, Env{TTL: env.TTL, Now: env.Now,
				NewTicker: func(every time.Duration) Ticker { return env.NewTicker(every) }})}
		}}
	token := func(h engine.Held) (int64, error) { return 0, nil }
	if l.Fenced {
		token = func(h engine.Held) (int64, error) {
			f, ok := h.(Fenced)
			if !ok {
				return 0, &engine.CheckError{Err: fmt.Errorf("lockcheck: %s is declared Fenced, but its Obtain returned a %T, which has no Token() int64: "+
					"a wrapper that hides the held lock's Token drops its fencing (return the lock's own held value, or give the wrapper a Token method)", name, h)}
			}
			if n := f.Token(); n <= 0 {
				return 0, &engine.CheckError{Err: fmt.Errorf("lockcheck: %s is declared Fenced, but a held lock's Token() is %d: a fencing token is positive", name, n)}
			}
			return f.Token(), nil
		}
	}
	switch {
	case l.Section != nil:
		b, err := l.Section.business(token)
		if err != nil {
			return engine.Target{}, fmt.Errorf("lockcheck: %s: %w", name, err)
		}
		t.Business = b
	case l.Fenced:
		t.Business = engine.FencedSale(token)
	}
	return t, nil
}

// business is s as the engine runs it.
func (s *Section) business(token func(engine.Held) (int64, error)) (*engine.Business, error) {
	switch {
	case s.Run == nil:
		return nil, errors.New("Section.Run is nil")
	case s.Invariant == nil:
		return nil, errors.New("Section.Invariant is nil: say what must hold of the keys")
	case len(s.Keys) == 0:
		return nil, errors.New("Section.Keys is empty: name the keys the invariant reads")
	}
	keys := append([]string(nil), s.Keys...)
	return &engine.Business{
		Init: s.Init, Keys: keys,
		Run: func(ctx context.Context, rdb redis.UniversalClient, held engine.Held) error {
			if _, err := token(held); err != nil {
				return err // the declared fencing is missing: the check's failure
			}
			return s.Run(ctx, rdb, held)
		},
		Judge: func(values []string) error {
			m := make(map[string]string, len(keys))
			for i, k := range keys {
				m[k] = values[i]
			}
			return s.Invariant(m)
		},
	}, nil
}

// locker is the engineer's Locker as the engine's: the held lock handed
// on as it is, so that the section sees the lock's own value.
type locker struct{ l Locker }

func (a locker) Obtain(ctx context.Context, key string) (engine.Held, error) {
	h, err := a.l.Obtain(ctx, key)
	if err != nil || h == nil {
		return nil, err
	}
	return h, nil
}

func init() { engine.SkipCallers("github.com/lockladder/lockladder/lockcheck") }
