package engine

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Replayer replays counterexamples on a real redis-server: the rung's
// real clients, connected to it over TCP, are driven through the same
// schedule (each command held back until its step, the watchdogs ticked,
// the crashes and pauses done at the same points), on real time, with a
// shorter lease so that time passing takes a fraction of a second.
type Replayer struct {
	// Network is "tcp" (default) or "unix".
	Network string
	Addr    string
	// Password is what the server requires of its clients ("" for none):
	// StartReplayer's requires one of its own, so that nobody else on
	// the host reaches it.
	Password string
	// TTL is the lease of the replay. Default 300ms.
	TTL time.Duration
}

// Replay drives real clients through r's schedule and says whether the
// violation happened there too: "reproduced" or "not-reproduced" ("-"
// for a result with nothing to replay).
func (p *Replayer) Replay(ctx context.Context, t Target, r Result) string {
	if r.Verdict == None || p == nil {
		return "-"
	}
	cfg := r.Config
	cfg.TTL = p.TTL
	switch {
	case cfg.TTL > 0:
	case slices.ContainsFunc(r.Asleep, func(b uint8) bool { return b != 0 }):
		// A client slept on its own clock (a retry's sleep, in a bubble):
		// the lease stays the search's, so that its sleeps and the lease
		// keep their proportions on the real clock.
		cfg.TTL = r.Config.TTL
	default:
		cfg.TTL = cmp.Or(t.ReplayTTL, 300*time.Millisecond)
	}
	cfg.MaxClients = r.Clients
	cfg.password, cfg.network = p.Password, p.Network
	ex := newReal(t, cfg, p.Addr)
	ex.asleep = r.Asleep
	defer ex.Close()
	got := false
	ex.driving(func() {
		if r.Verdict == Deadlock || r.Verdict == Leaked {
			_, got = ex.probe(r.Clients, r.Schedule)
			return
		}
		w, ok := ex.replay(r.Clients, r.Schedule)
		got = ok && w.broken() != nil
		w.close()
	})
	if got {
		return "reproduced"
	}
	return "not-reproduced"
}

// driving runs f one explorer at a time: the world whose virtual time
// the lockers' Options.Ticker and Options.After follow (current) is one
// per process.
func (ex *Explorer) driving(f func()) {
	if ex.bubble { // a world of its own, on its bubble's clock
		f()
		return
	}
	running <- struct{}{}
	defer func() { <-running }()
	f()
}
