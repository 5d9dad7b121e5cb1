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
// section to be cut: far beyond an unarmed section (a GET and a SET on
// Redis), well within an armed one's work=600ms.
const cutIdle = 150 * time.Millisecond

// The armed request's bounds: it waits for the lock up to cutTry, then
// works cutWork in its section.
const (
	cutTry  = 5 * time.Second
	cutWork = 600 * time.Millisecond
)

// cutHolder ends the PostgreSQL session of a holder idle in its section
// for cutIdle, looking until one is found: the armed request may wait
// for the lock first. It looks for as long as that request can be in
// its section (its try= and its work=), not for a time of its own: a
// bound of try= alone ran out, on a loaded machine, before a request
// that took the lock late had been idle cutIdle.
func cutHolder(ctx context.Context, t Stack) error {
	pc, ok := t.(postgresControl)
	if !ok {
		return errors.New("the stack has no PostgreSQL to cut a session of")
	}
	ctx, cancel := context.WithTimeout(ctx, cutTry+cutWork)
	defer cancel()
	n, err := pc.CutPostgresHolders(ctx, cutIdle, 10*time.Millisecond)
	switch {
	case n > 0:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		// Its armed request found the lock busy past its try= (under
		// load) and answered 503: then the run does not fail for it.
		return fmt.Errorf("no holder idle %s in its section within its try= and work= (%s): %w", cutIdle, cutTry+cutWork, bench.ErrNotStruck)
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
