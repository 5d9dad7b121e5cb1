package engine

import (
	"fmt"
	"strings"
	"time"
)

// Faults are the kinds of fault and of passing time a search may put in
// a schedule, each a choice at any step.
type Faults uint16

const (
	// Crash: a client dies after a step; it sends nothing more, and its
	// watchdog stops with it.
	Crash Faults = 1 << iota
	// Pause: a holder freezes (a GC pause, SIGSTOP) for a lease and a
	// millisecond; its watchdog freezes with it, everyone else's runs.
	Pause
	// Skew: a client's clock jumps ahead by a lease and a half.
	Skew
	// Slow: time passes at any step, to the next thing that falls due (a
	// key's expiry, a watchdog's tick, a timestamp's): a business may
	// outlive the lease.
	Slow
	// Late: time passes as with Slow, but only while every live client
	// is between attempts or releasing: every section fits its lease,
	// and a release may come late.
	Late
	// Idle: time passes only while every live client is between
	// attempts: a dead holder's lease runs out, and nothing else.
	Idle
	// Restart: a master of a rung on masters (Redlock) restarts without
	// persistence (no AOF with fsync) and comes back empty, forgetting
	// the locks it granted.
	Restart
	// Lost: a client's command runs on Redis but its reply never comes
	// back; the client sees a timeout (a net.Error) and goes on as its
	// code says: the retried release that deletes the next holder's
	// lock, the SET whose success its sender never learns.
	Lost
	// Cancel: the context a client's Obtain or Release was given is
	// cancelled at one of the commands it sends, either before the
	// command is sent (go-redis returns the context's error and sends
	// nothing) or after it ran on Redis, before its reply (a client that
	// watches its context, as rueidis does or a select on ctx.Done()
	// around the call: the command ran, its sender sees
	// context.Canceled). A client whose Obtain returns an error once its
	// context is cancelled gives up, as the request it served has; a
	// lock key it left that no client can ever take again is LEAKED.
	Cancel
)

var faultNames = []string{"crash", "pause", "skew", "slow", "late", "idle", "restart", "lost", "cancel"}

// String names the faults, comma-separated, as ParseFaults reads them.
func (f Faults) String() string {
	var names []string
	for i, n := range faultNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseFaults reads a comma-separated list of fault names.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	for _, n := range strings.Split(s, ",") {
		i := indexOf(faultNames, strings.TrimSpace(n))
		if i < 0 {
			return 0, fmt.Errorf("lockcheck: no fault %q (valid: %s)", n, strings.Join(faultNames, ", "))
		}
		f |= 1 << i
	}
	return f, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// Config bounds a search. Zero values take the defaults.
type Config struct {
	// MaxClients: the search tries 2 clients, then up to MaxClients.
	// Default 3.
	MaxClients int
	// Sections each client runs. Default 1.
	Sections int
	// Depth bounds a schedule's steps. Default 18.
	Depth int
	// MaxFaults bounds the crashes, pauses and skews of one schedule;
	// MaxTicks, the times time passes. Defaults 1 and 2.
	MaxFaults, MaxTicks int
	// Budget bounds the search's time. Default 60s.
	Budget time.Duration
	// TTL is the lease. Default 2s (the app's).
	TTL time.Duration
	// Faults overrides the target's own (the scenario the ladder names).
	Faults Faults

	// password is what a replay's redis-server requires (Replayer's);
	// network is how it is reached ("" tcp).
	password, network string
}

func (c Config) withDefaults(t Target) Config {
	if c.MaxClients <= 0 {
		c.MaxClients = 3
	}
	c.MaxClients = min(c.MaxClients, 4)
	if t.MaxClients > 0 {
		c.MaxClients = min(c.MaxClients, t.MaxClients)
	}
	if c.Sections <= 0 {
		c.Sections = 1
	}
	if c.Depth <= 0 {
		c.Depth = 18
	}
	if c.MaxFaults <= 0 {
		c.MaxFaults = 1
	}
	if c.MaxTicks <= 0 {
		c.MaxTicks = 2
	}
	if c.Budget <= 0 {
		c.Budget = 60 * time.Second
	}
	if c.TTL <= 0 {
		c.TTL = 2 * time.Second
	}
	if c.Faults == 0 {
		c.Faults = t.Faults
	}
	return c
}
