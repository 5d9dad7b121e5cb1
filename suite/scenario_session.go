package suite

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// postgresControl is what sessionCut needs of a stack: a control
// connection to its PostgreSQL that ends the session of a holder idle in
// its section, looking every poll until it finds one (*stack.Stack has
// it).
type postgresControl interface {
	CutPostgresHolders(ctx context.Context, idle, poll time.Duration) (int, error)
}

// cutIdle is how long a holder's session must have been idle in its
// section to be cut: only an armed request's session is a candidate
// (CutAdvisoryHolders), and once its lock is granted it is in its
// section, for its work=600ms; the shorter cutIdle, the wider the window
// in which a look, late on a loaded machine, still finds it.
const cutIdle = 50 * time.Millisecond

// The armed request's bounds: it waits for the lock up to cutTry, then
// works cutWork in its section.
const (
	cutTry  = 5 * time.Second
	cutWork = 600 * time.Millisecond
)

// cutHolder ends the PostgreSQL session of a holder idle in its section
// for cutIdle, looking until one is found: the armed request may wait
// for the lock first. It looks for as long as an armed request of the
// run is unanswered (bench.WhileArmed), not for a time of its own: a
// bound of the request's try= and work= ran out, on a loaded machine,
// before a request that took the lock late had been idle cutIdle (0 of
// 4 armed requests gave up, and one hook found nobody to cut).
func cutHolder(ctx context.Context, t Stack) error {
	pc, ok := t.(postgresControl)
	if !ok {
		return errors.New("the stack has no PostgreSQL to cut a session of")
	}
	look, cancel := bench.WhileArmed(ctx)
	defer cancel()
	n, err := pc.CutPostgresHolders(look, cutIdle, 10*time.Millisecond)
	switch {
	case n > 0:
		return nil
	case ctx.Err() == nil && look.Err() != nil:
		// Every armed request was answered, none idle in its section
		// for cutIdle: they found the lock busy past their try= (under
		// load) and answered 503; then the run does not fail for it.
		return fmt.Errorf("no holder idle %s in its section while an armed request was out (%v): %w", cutIdle, err, bench.ErrNotStruck)
	}
	return err
}

// sessionCut: the session a PostgreSQL advisory lock belongs to ends
// under its holder. The lab terminates it from a control connection
// (pg_terminate_backend), as a pooler recycling a server connection it
// thinks idle, a failover or a network cut would; the server frees the
// lock at once, the next holder enters, and the first, told nothing,
// writes its stale stock when its business ends.
func sessionCut() Scenario {
	hooks := make([]Hook, len(few))
	for i, at := range few {
		hooks[i] = Hook{At: at, About: fmt.Sprintf("cut the PostgreSQL session of a holder idle %s in its section", cutIdle), Do: cutHolder}
	}
	return Scenario{
		Name: "session-cut",
		About: fmt.Sprintf("a few requests' business takes 600ms (they wait up to 5s for the lock); while each holds the lock, "+
			"the lab ends its PostgreSQL session (pg_terminate_backend of a holder idle %s), as a pooler, a failover or a network cut would", cutIdle),
		AppArgs:    faultArgs(),
		Armed:      url.Values{"work": {cutWork.String()}, "try": {cutTry.String()}},
		ArmAt:      few,
		Hooks:      hooks,
		StallBound: stallBound,
		Expect: map[string]string{
			// The holder learns at its unlock, or its COMMIT, after its
			// Redis write landed.
			"pg-advisory": oversold, "pg-advisory-xact": oversold,
			// Its token, drawn on the cut session, is below the next
			// holder's: its late write is refused.
			"pg-advisory-fenced": safe,
		},
		SkipOther: "only the PostgreSQL rungs' locks are sessions the lab cuts (ZooKeeper's and etcd's sessions lapse under pause-session)",
	}
}
