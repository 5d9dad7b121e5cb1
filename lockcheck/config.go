package lockcheck

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockladder/lockladder/lockcheck/engine"
)

// Fault is a fault, or a way for time to pass, that a schedule may have.
type Fault string

const (
	// Crash: a client dies after a step: it sends nothing more, its
	// watchdog neither.
	Crash Fault = "crash"
	// Late: time passes to the next thing due (a key's expiry, a
	// timestamp in a value), but only while every live client is between
	// attempts or releasing: every section fits its lease; a release may
	// come late, and a dead holder's lease runs out.
	Late Fault = "late"
	// Slow: time passes at any step: a section may outlive its lease.
	Slow Fault = "slow"
	// Pause: a holder freezes (a GC pause, SIGSTOP) for a lease and a
	// millisecond; a ticker from Env.NewTicker freezes with it.
	Pause Fault = "pause"
	// Skew: a client's clock (Env.Now) runs a lease and a half ahead.
	Skew Fault = "skew"
	// Lost: a command runs on Redis but its reply is lost; the lock's
	// code gets a timeout (a net.Error) and goes on as it is written: a
	// release retried after a timeout that deletes the next holder's
	// lock, a SET NX that took the lock without its sender knowing. An
	// Obtain that then returns an error ends its client, as a request
	// that timed out gives up; a key it left that no client can ever take
	// is LEAKED. Not in the default search (it is a choice at every
	// command): ask for it by name, beside the others, Faults{Crash,
	// Late, Lost}.
	Lost Fault = "lost"
	// Cancel: the context given to an Obtain or a Release is cancelled at
	// a command it sends: before the command is sent (go-redis returns
	// the context's error and sends nothing), or after it ran on Redis,
	// before its reply (the sender sees context.Canceled, as with a client
	// that watches its context: rueidis, or a select on ctx.Done()). The
	// context stays cancelled, so cleanup on it sends nothing. A client
	// whose Obtain then fails gives up, as its request has. Besides a
	// second owner, the check finds a LEAKED key: one the cancelled call
	// left behind that no client can ever take again (a key with a TTL
	// expires: the others wait a lease, which is no leak). Not in the
	// default search: ask for it by name, Faults{Crash, Late, Cancel}.
	Cancel Fault = "cancel"
)

// Faults are the faults a search may put in a schedule. Nil is the
// default search, in two stages: first Crash and Late, in which every
// section fits its lease, so that a bug of the lock's own (a release
// that frees another client's lock, two clients that both break a stale
// lock) is found as itself; then Crash, Pause, Slow and Skew, the lease
// that lapses, which every lease shares. An empty set (Faults{}) is no
// fault and no time passing: the interleavings alone.
type Faults []Fault

// stages are the searches fs asks for, in order.
func (fs Faults) stages() ([]engine.Faults, error) {
	if fs == nil {
		return []engine.Faults{engine.Crash | engine.Late, engine.Crash | engine.Pause | engine.Slow | engine.Skew}, nil
	}
	var f engine.Faults
	for _, x := range fs {
		b, ok := faultBits[x]
		if !ok {
			return nil, fmt.Errorf("lockcheck: no fault %q (faults: crash, late, slow, pause, skew, lost, cancel)", string(x))
		}
		f |= b
	}
	return []engine.Faults{f}, nil
}

var faultBits = map[Fault]engine.Faults{Crash: engine.Crash, Late: engine.Late, Slow: engine.Slow, Pause: engine.Pause, Skew: engine.Skew, Lost: engine.Lost, Cancel: engine.Cancel}

// Config bounds a check. Zero values take the defaults.
type Config struct {
	// Faults are the faults searched (nil: the default stages, Faults).
	Faults Faults
	// Clients: the search tries 2 clients, then up to Clients (at most
	// 4). Default 3.
	Clients int
	// Sections each client runs. Default 1.
	Sections int
	// Depth bounds a schedule's steps: every schedule up to Depth is
	// searched (a state reached before is not explored again). Default 14.
	Depth int
	// MaxFaults bounds the faults of one schedule, MaxTicks the times time
	// passes in it. Defaults 1 and 2.
	MaxFaults, MaxTicks int
	// TTL is the lease the lock is told to take (Env.TTL). Default 2s.
	TTL time.Duration
	// Budget bounds the check's time (default 60s). A search it cuts
	// short fails the check, saying how far it came, unless TimeBox.
	Budget time.Duration
	// TimeBox asks for a search that stops at its Budget: cut short, it
	// passes, and its coverage says how far it came.
	TimeBox bool
	// NoReplay skips the replay of a verdict on a real redis-server.
	NoReplay bool
}

func (c Config) withDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 3
	}
	if c.Depth <= 0 {
		c.Depth = 14
	}
	if c.Budget <= 0 {
		c.Budget = 60 * time.Second
	}
	return c
}

// engine is the engine's Config of a stage with faults f and a share of
// the budget.
func (c Config) engine(f engine.Faults, budget time.Duration) engine.Config {
	return engine.Config{MaxClients: c.Clients, Sections: c.Sections, Depth: c.Depth, MaxFaults: c.MaxFaults, MaxTicks: c.MaxTicks,
		TTL: c.TTL, Budget: budget, Faults: f}
}

// faultNames is f in the words of Faults.
func faultNames(f engine.Faults) string {
	var out []string
	for _, x := range []Fault{Crash, Late, Slow, Pause, Skew, Lost, Cancel} {
		if f&faultBits[x] != 0 {
			out = append(out, string(x))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}
