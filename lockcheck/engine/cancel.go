package engine

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// A context cancelled during Obtain or Release (Cancel). Under Cancel
// each client's Obtain and each Release get a context of their own,
// which the search may cancel at any command the call sends (or at the
// start of an attempt, before its first), once a schedule per client:
//
//   - before the command is sent (CancelIt, "cancel A", token cA): the
//     command never reaches Redis and the sender gets the context's
//     error, as go-redis answers a command whose context has ended;
//   - after it ran on Redis, before its reply (CancelAfterIt, "cancel-after
//     A", token kA): the sender gets context.Canceled for a command that
//     did run. go-redis itself waits for the reply of a command it has
//     sent (unless ContextTimeoutEnabled, whose deadline passing is a
//     timeout: Lost); a client that watches its context does not
//     (rueidis, or a select on ctx.Done() around the call).
//
// Either way the context stays cancelled: every later command of the
// same call fails at once, unsent, so a lock that cleans up on the
// context it was given cleans up nothing. A command the lock sends on a
// context that does not derive from the one it was given is not
// cancelled: it goes as it would. An Obtain that returns an error once
// its context is cancelled ends its client's program (the request it
// served has given up); a Release's error is ignored as ever.
//
// What may go wrong: a second owner (the business judges it, OVERSOLD),
// or a leaked key: a lock key that a cancelled call left behind and that
// no client can ever take again, however long time runs (LEAKED; the
// probe of a DEADLOCK decides it). A key with a TTL that a cancelled
// Obtain left is no leak: it expires and the others take the lock a
// lease late. A key without one (SETNX whose EXPIRE was cancelled, a
// release cancelled before its DEL of a lock without a lease) is.

// cancelWhen is when the search cancels a call's context at a command.
type cancelWhen uint8

const (
	cancelBefore cancelWhen = 1 + iota // before it is sent
	cancelAfter                        // after it ran, before its reply
)

// opContext is the context of one Obtain or Release of c's program: ctx
// itself, or under Cancel a context the search may cancel (opCancel).
// Called by the program before the call: the gates read opCancel in the
// same goroutine, or one the call started.
func (c *client) opContext(ctx context.Context) context.Context {
	if c.w.ex.cfg.Faults&Cancel == 0 || c.w.multi() {
		return ctx
	}
	op, cancel := context.WithCancel(ctx)
	c.opCancel = cancel
	return op
}

// markCancel marks g, the command of c about to be delivered, with the
// cancel the search chose for it (fate).
func (w *world) markCancel(c *client, g *gate) {
	if c.fate == 0 {
		return
	}
	g.cancel, c.fate = c.fate, 0
	c.cancelled, c.cancelIn, c.cancelSection = true, c.phase, c.sections
	w.used.faults++
}

// cancelCall cancels the sender's call and fails cmds with the
// context's error, which it returns; nil when the command's context does
// not derive from the call's (it goes on as it would).
func (g *gate) cancelCall(ctx context.Context, cmds []redis.Cmder) error {
	if g.c.opCancel == nil {
		return nil
	}
	g.c.opCancel()
	err := ctx.Err()
	if err != nil {
		for _, cmd := range cmds {
			cmd.SetErr(err)
		}
	}
	return err
}

// cancelBeforeSend cancels the sender's call before cmds are sent, in
// the sender's goroutine, and says with what error they failed unsent
// (nil: they go on as they would).
func (g *gate) cancelBeforeSend(ctx context.Context, cmds []redis.Cmder) error {
	err := g.cancelCall(ctx, cmds)
	g.unsent = err != nil
	return err
}

// cancelAfterRun cancels the sender's call once cmds have run, and
// drops their replies for the context's error; err when the command's
// context does not derive from the call's.
func (g *gate) cancelAfterRun(ctx context.Context, cmds []redis.Cmder, err error) error {
	if cerr := g.cancelCall(ctx, cmds); cerr != nil {
		return cerr
	}
	return err
}

// stuck is the verdict of a world whose live clients can never take a
// lock no live client holds: DEADLOCK when a client died (a crash left
// the key), LEAKED when none did (a cancelled call left it).
func (w *world) stuck() string {
	for _, c := range w.clients {
		if c.crashed {
			return Deadlock
		}
	}
	return Leaked
}

// leakedWhy is a LEAKED verdict's violation, in words.
const leakedWhy = "a cancelled Obtain or Release, or an Obtain that gave up on a lost reply, left the lock key behind, held by no client and never expiring: " +
	"no client can take the lock again (a key with a TTL would have expired: that is no leak)"
