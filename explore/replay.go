package explore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/backends"
	"github.com/lockladder/lockladder/stack/redisfam"
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

// StartReplayer starts a redis-server on a free loopback port for the
// replays. Without one installed it says so on out and returns nil (no
// replays), except under requireReal (CI=true), where that is an error.
func StartReplayer(ctx context.Context, out io.Writer, requireReal bool) (*Replayer, func(), error) {
	if _, err := stack.LookPath("redis-server"); err != nil {
		if requireReal {
			return nil, nil, fmt.Errorf("explore: replay needs redis-server (CI=true): %w", err)
		}
		fmt.Fprintf(out, "replay skipped: %s\n\n", stack.Install("redis-server"))
		return nil, func() {}, nil
	}
	pw := backends.NewPassword()
	r, err := redisfam.StartAuth(ctx, "127.0.0.1:0", stack.Real, true, pw, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("explore: start redis-server for the replays: %w", err)
	}
	return &Replayer{Addr: r.Addr(), Password: pw}, func() { _ = r.Stop() }, nil
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
		switch r.Verdict {
		case Oversold:
			w, ok := ex.replay(r.Clients, r.Schedule)
			got = ok && w.broken() != nil
			w.close()
		case Deadlock:
			_, got = ex.probe(r.Clients, r.Schedule)
		}
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
