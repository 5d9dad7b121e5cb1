package engine

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// endReplies answers the commands of an ended world without Redis: a
// script's 0 (not taken, not held: the rung gives up), an error for the
// rest; in a bubble an error for all (a lock that retries a script's 0
// would retry for ever).
func (ex *Explorer) endReplies(cmds []redis.Cmder) error {
	for _, cmd := range cmds {
		if c, ok := cmd.(*redis.Cmd); ok && !ex.bubble {
			c.SetVal(int64(0))
			continue
		}
		cmd.SetErr(errEnded)
	}
	if len(cmds) == 1 {
		return cmds[0].Err()
	}
	return errEnded
}

// gateHook holds every command of one client at a gate until the search
// delivers it. A script sent by digest that Redis does not know yet goes
// straight through (NOSCRIPT changes nothing), as do SCRIPT LOAD and
// the connection's own commands: they are not steps.
type gateHook struct {
	ex   *Explorer
	id   int
	node int // 0: the client's server; m: master m
	w    atomic.Pointer[world]
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.pass(ctx, []redis.Cmder{cmd}, func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.pass(ctx, cmds, func(ctx context.Context) error { return next(ctx, cmds) })
	}
}

func (h *gateHook) pass(ctx context.Context, cmds []redis.Cmder, send func(context.Context) error) error {
	if (h.ex.target.WaitsAll || h.ex.target.WallDeadlines) && ctx.Value(mainKey{}) != nil {
		// A library's own wall-clock deadlines (redsync's, 5% of the
		// expiry for each call) never pass in a schedule: for them no
		// time passes (libraries.go), however long a command is held.
		// Else, on a loaded machine, a held command's deadline ended it
		// and its program ran on beside the world that held it (a data
		// race under -race, a schedule that diverged).
		ctx = context.WithoutCancel(ctx)
	}
	w := h.w.Load()
	if cw, ok := ctx.Value(mainKey{}).(*world); ok {
		// A client's program, or a goroutine it started (a Redlock
		// round's): its world, even once another has begun.
		w = cw
	}
	if w != nil {
		w.inflight.Add(1)
		defer w.inflight.Add(-1)
	}
	if w == nil || !gated(cmds[0]) {
		err := send(ctx)
		h.ex.scripts.note(cmds)
		return err
	}
	if w.closed.Load() {
		if w.ex.bubble && w.afterClose.Add(1) > postClose {
			w.park(cmds)
		}
		return h.ex.endReplies(cmds)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if h.ex.scripts.unknown(cmds[0]) {
		return send(ctx)
	}
	c := w.clients[h.id]
	if cc, ok := ctx.Value(clientKey{}).(*client); ok && cc.w == w {
		// A process's requests share its Locker and so its connection:
		// the command is the program's whose context it carries.
		c = cc
	}
	g := &gate{c: c, node: h.node, wd: ctx.Value(mainKey{}) == nil, cmds: cmds, open: make(chan bool, 1), sent: make(chan struct{}), ctx: ctx}
	if w.traced {
		g.callers = readCallers()
	}
	w.inflight.Add(-1)
	w.send(event{kind: evGate, c: c, g: g})
	select {
	case ok := <-g.open:
		w.inflight.Add(1)
		if !ok {
			return h.ex.endReplies(cmds)
		}
	case <-w.halt:
		w.inflight.Add(1)
		return h.ex.endReplies(cmds)
	case <-ctx.Done():
		// A watchdog stopped while its renewal was held (the holder
		// released): the renewal is never sent, as go-redis gives up a
		// command whose context ends.
		w.inflight.Add(1)
		w.send(event{kind: evGateGone, c: c, g: g})
		return ctx.Err()
	}
	if g.cancel == cancelBefore {
		if err := g.cancelBeforeSend(ctx, cmds); err != nil {
			g.answers = answersOf(cmds)
			close(g.sent)
			return err
		}
	}
	err := send(ctx)
	h.ex.scripts.note(cmds)
	if g.cancel == cancelAfter {
		err = g.cancelAfterRun(ctx, cmds, err)
	}
	if g.lost {
		for _, cmd := range cmds {
			cmd.SetErr(ErrReplyLost)
		}
		err = ErrReplyLost
	}
	g.answers = answersOf(cmds)
	if g.node > 0 {
		// Before the sender hands the answer back to its program.
		w.send(event{kind: evAnswered, c: c, g: g})
	}
	close(g.sent)
	return err
}

// gated says whether cmd is a step of a schedule.
func gated(cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "hello", "client", "ping", "auth", "select", "script":
		return false
	}
	return true
}

// ErrReplyLost is what a client gets for a command whose reply the
// search lost (Lost): the command ran on Redis. It is a net.Error that
// says it timed out, as a read deadline that passed would.
var ErrReplyLost error = replyLost{}

type replyLost struct{}

func (replyLost) Error() string {
	return "lockcheck: i/o timeout: the command ran on Redis, its reply was lost"
}
func (replyLost) Timeout() bool   { return true }
func (replyLost) Temporary() bool { return true }

// markLost marks g, the command of c about to be delivered, as the one
// whose reply the search loses (LoseIt), if it chose to.
func (w *world) markLost(c *client, g *gate) {
	if !c.loseNext {
		return
	}
	c.loseNext, g.lost = false, true
	if c.phase == phaseObtain {
		c.lostAttempt = c.attempt
	}
	w.used.faults++
}
