package engine

import (
	"fmt"
	"time"
)

// ChoiceKind is what a step of a schedule does.
type ChoiceKind int

const (
	Deliver       ChoiceKind = iota // the client's next command reaches Redis
	DeliverWD                       // its watchdog's renewal reaches Redis
	Tick                            // time passes to the next thing due
	CrashIt                         // the client dies
	PauseIt                         // the client freezes past its lease
	SkewIt                          // the client's clock runs ahead, from the start
	RestartIt                       // master Node restarts empty
	LoseIt                          // the client's next command runs, its reply is lost
	CancelIt                        // the context of its Obtain or Release is cancelled before its next command is sent
	CancelAfterIt                   // its next command runs, then that context is cancelled before the reply
)

// Choice is one step of a schedule.
type Choice struct {
	Kind   ChoiceKind
	Client int
	// Node is where a Deliver goes: 0 the client's own server, m master
	// m of a target on masters.
	Node int
}

// choices lists what may happen next, in the order the search tries.
func (w *world) choices() []Choice {
	var out []Choice
	anyLive, idle, late := false, true, true
	for _, c := range w.clients {
		if c.live() {
			anyLive = true
			idle = idle && c.idle()
			late = late && (c.idle() || c.phase == phaseRelease)
		}
		if c.crashed {
			continue
		}
		if w.multi() {
			out = append(out, w.nodeChoices(c)...)
		} else if c.gate != nil {
			out = append(out, Choice{Kind: Deliver, Client: c.id})
		}
		if c.renewal() != nil {
			out = append(out, Choice{Kind: DeliverWD, Client: c.id})
		}
	}
	if !anyLive {
		return nil
	}
	f, cfg := w.ex.cfg.Faults, w.ex.cfg
	if w.midRound() {
		// A library's round reads the wall clock at its start and end
		// (redsync's validity): time that passed inside it would fail
		// it there, where in the search no time passes for it.
		f &^= Slow | Late | Idle | Pause
	}
	if w.used.ticks < cfg.MaxTicks && (f&Slow != 0 || f&Late != 0 && late || f&Idle != 0 && idle) {
		out = append(out, Choice{Kind: Tick})
	}
	if w.used.faults >= cfg.MaxFaults {
		return out
	}
	if f&Restart != 0 && w.multi() {
		out = append(out, w.restartChoices()...)
	}
	for _, c := range w.clients {
		if !c.live() {
			continue
		}
		if f&Crash != 0 && (!c.idle() || c.sleeping()) { // a client between attempts holds nothing: its crash is its end
			out = append(out, Choice{Kind: CrashIt, Client: c.id})
		}
		if f&Pause != 0 && c.holding() {
			out = append(out, Choice{Kind: PauseIt, Client: c.id})
		}
		if f&Skew != 0 && w.ex.target.Clocks && c.skew == 0 && !w.moved {
			out = append(out, Choice{Kind: SkewIt, Client: c.id})
		}
		// At a command, or at the start of an attempt: its first.
		if f&Lost != 0 && !w.multi() && c.gate != nil && c.gate.wake == nil && !c.asleep() {
			out = append(out, Choice{Kind: LoseIt, Client: c.id})
		}
		if f&Cancel != 0 && c.cancellable() {
			out = append(out, Choice{Kind: CancelIt, Client: c.id}, Choice{Kind: CancelAfterIt, Client: c.id})
		}
	}
	return out
}

// cancellable says c waits to send a command of its Obtain or Release
// (or to start an attempt), whose context the search may cancel: once a
// schedule, for one client.
func (c *client) cancellable() bool {
	g := c.gate
	return !c.w.multi() && !c.cancelled && g != nil && g.wake == nil && !g.wd && (c.phase == phaseObtain || c.phase == phaseRelease)
}

// apply takes one step; false when the step is not possible here (the
// replay went another way: a bug).
func (w *world) apply(ch Choice) bool {
	var c *client
	if ch.Kind != Tick && ch.Kind != RestartIt {
		c = w.clients[ch.Client]
	}
	ttl := w.ex.cfg.TTL
	if ch.Kind != SkewIt {
		w.stepNo++
	}
	switch ch.Kind {
	case Deliver, DeliverWD:
		if w.multi() && ch.Kind == Deliver {
			start := c.gate != nil && c.gate.cmds == nil
			if c.crashed || ch.Node == 0 && c.gate == nil || ch.Node > 0 && !start && c.nodes[ch.Node-1] == nil {
				return false
			}
			w.deliverNode(c, ch.Node)
			break
		}
		wd := ch.Kind == DeliverWD
		w.awaitGate(c, wd)
		if c.crashed || wd && c.renewal() == nil || !wd && c.gate == nil {
			return false
		}
		w.deliver(c, wd)
	case Tick:
		w.used.ticks++
		to := w.nextDue()
		w.advance(to, nil)
		w.step(-1, "", "", fmt.Sprintf("time passes to %dms", to.Sub(w.epoch).Milliseconds()), w.snapshot())
	case CrashIt:
		w.used.faults++
		struck := w.strikes(c)
		for _, o := range struck {
			o.crashed = true
		}
		what := "** crashes **"
		if len(struck) > 1 {
			what = "** its process crashes **"
		}
		if c.gate != nil && c.gate.cmds != nil {
			next, _ := w.show(c, c.gate.cmds, nil)
			what += " (before " + next + ")"
		}
		w.step(c.id, what, "", "", w.snapshot())
	case PauseIt:
		w.used.faults++
		d := ttl + time.Millisecond
		w.step(c.id, fmt.Sprintf("** pauses %dms **", d.Milliseconds()), "", "", w.snapshot())
		w.advance(w.time().Add(d), c.process())
		w.step(-1, "", "", fmt.Sprintf("%s wakes at %dms", c.name, w.time().Sub(w.epoch).Milliseconds()), w.snapshot())
	case LoseIt:
		w.awaitGate(c, false)
		if c.crashed || w.multi() || c.gate == nil || c.asleep() {
			return false
		}
		c.loseNext = true
		w.deliver(c, false)
		if c.loseNext { // a start that sent no command: nothing was lost
			c.loseNext = false
			return false
		}
	case CancelIt, CancelAfterIt:
		w.awaitGate(c, false)
		if c.crashed || !c.cancellable() {
			return false
		}
		// Marked on the command deliver sends: at the start of an
		// attempt, its first.
		c.fate = cancelBefore
		if ch.Kind == CancelAfterIt {
			c.fate = cancelAfter
		}
		w.deliver(c, false)
	case RestartIt:
		w.used.faults++
		w.ex.masters[ch.Node-1].FlushDB()
		w.step(-1, "", "", fmt.Sprintf("m%d restarts empty", ch.Node), w.snapshot())
	case SkewIt:
		return false // a skew is the world's from its start: replay applies it
	}
	w.moved = true
	w.noteSleepers()
	w.applied++
	return true
}

// expectAsleep says the search saw c asleep after the step being
// applied (a replay on real time of a schedule found in a bubble).
func (w *world) expectAsleep(c *client) bool {
	i := w.applied + 1
	return i < len(w.ex.asleep) && w.ex.asleep[i]&(1<<c.id) != 0
}

// awaitGate waits, on a real Redis, for c's next command to reach its
// gate: a client the search saw asleep wakes on the real clock.
func (w *world) awaitGate(c *client, wd bool) {
	if !w.ex.real {
		return
	}
	w.await(func() bool { return c.finished || c.crashed || !wd && c.gate != nil || wd && c.renewal() != nil })
}

// noteSleepers marks when each client fell asleep (in a bubble): how
// long it has slept is part of the state, as a timer's time left.
func (w *world) noteSleepers() {
	var bits uint8
	defer func() {
		if !w.ex.quiet {
			w.asleepLog = append(w.asleepLog, bits)
		}
	}()
	for _, c := range w.clients {
		if c.asleep() {
			bits |= 1 << c.id
		}
		switch {
		case !c.asleep():
			c.sleptAt = time.Time{}
		case c.sleptAt.IsZero():
			c.sleptAt = w.time()
		}
	}
}

// nextDue is the next instant something falls due: a key expires, a
// watchdog ticks, an expiry timestamp (rungs 7 and 8) passes; at most a
// lease away.
func (w *world) nextDue() time.Time {
	t, _ := w.nextDueWhat()
	return t
}

// nextDueWhat is nextDue and what falls due then, in words for the
// game's button ("" when nothing does: time just passes a lease).
func (w *world) nextDueWhat() (time.Time, string) {
	now := w.time()
	var next time.Time // zero: nothing due
	what := ""
	consider := func(t time.Time, why string) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next, what = t, why
		}
	}
	expires := func(ttl time.Duration) {
		switch {
		case ttl <= 0:
		case w.ex.real:
			// A real server's TTL is its own at an instant after now,
			// in whole milliseconds. Counted from now, a stall before
			// the read (a GC pause, a loaded machine) made time pass
			// to before the key expired, and B found A's key still
			// there. Counted from the answer, plus the millisecond cut
			// off, the key has expired by then on the same clock.
			consider(time.Now().Add(ttl+time.Millisecond), "a key's time to live runs out")
		default:
			consider(now.Add(ttl), "a key's time to live runs out")
		}
	}
	for _, db := range w.ex.masters {
		for _, k := range db.Keys() {
			expires(db.TTL(k))
		}
	}
	m := w.ex.kv
	for _, k := range m.Keys() {
		expires(m.TTL(k))
		if m.Type(k) == "string" {
			v := must(m.Get(k))
			if stampRe.MatchString(v) && len(v) == 13 {
				var ms int64
				fmt.Sscan(v, &ms)
				consider(time.UnixMilli(ms+1).UTC(), "the expiry time written in the lock passes")
			}
		}
	}
	for _, t := range w.tickers {
		if t.state == tickWaiting && t.live() && !t.c.crashed && t.c.renewal() == nil {
			consider(t.due, t.c.name+"'s watchdog is due to renew")
		}
	}
	if next.IsZero() {
		return now.Add(w.ex.cfg.TTL), ""
	}
	return next, what
}
