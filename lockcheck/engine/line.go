package engine

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// A process's line (Target.Line): cohort's lesson is what happens inside
// one process, where requests for the lock line up in memory and a
// section that ends passes the lock to the next without Redis. So B is a
// request of A's process: one Locker over one connection, made once for
// both, and B's Obtain waits in A's line (with a wait bound the search
// never reaches: it decides when anything happens). C, where there is
// one, is a process of its own, and takes the lock through Redis.
//
// A pass wakes B while A goes on, with no command between them: a step
// whose section ends with a request in its line lasts until that request
// has stopped too (settleAny). A request that starts while its line is
// busy parks with no command, so that its step lasts until the line
// counts it (Cohort.Waiting). A waiter that sleeps between two tries (fair's
// queue, polling for its handoff) sleeps at a gate of its own, until the
// search wakes it (Options.After: Explorer.after). A fault strikes a process: a crash
// kills both its requests, a pause freezes both and the watchdog that
// renews their shared lease; a watchdog is its process's (the leader's
// column), whichever request took the lock.

// clientKey marks a program's context with its client: a process's
// requests share one connection, so the gate tells them apart by it.
type clientKey struct{}

// WaitInLine is the wait bound of every Obtain in a line's world: never
// reached, so that a waiter waits until the search moves it.
const WaitInLine = time.Hour

// processOf is the process c belongs to: its first client.
func (w *world) processOf(c *client) *client {
	if w.ex.target.Line && c.id == 1 {
		return w.clients[0]
	}
	return c
}

// process is c's process (c itself without a line).
func (c *client) process() *client {
	if c == nil || c.proc == nil {
		return c
	}
	return c.proc
}

// move lets the goroutine of c (its program, or its watchdog when wd)
// go on, by let, and waits until it has stopped: at its next event
// (settle), or in a line's world, where a pass wakes another, until that
// one has stopped too.
func (w *world) move(c *client, wd bool, let func()) {
	if !w.ex.target.Line || wd { // a renewal wakes nobody
		let()
		w.settle(c, wd)
		return
	}
	// Read before c moves: then it writes them.
	sections, attempt := c.sections, c.attempt
	var parked []*client // in c's line
	for _, o := range w.parked() {
		if o.proc == c.proc && o != c {
			parked = append(parked, o)
		}
	}
	line, ok := c.locker.(interface{ Waiting(string) int })
	waiting := 0
	if ok {
		waiting = line.Waiting(w.ex.target.key())
	}
	let()
	// c may park in its line: then no event of its says it stopped, but
	// the line says it is in it, and it does nothing more until its turn.
	if !w.await(func() bool { return w.stopped(c) || ok && line.Waiting(w.ex.target.key()) > waiting }) {
		panic(fmt.Sprintf("lockcheck: %s: client %s neither stopped nor waits in its line after %s", w.ex.target.Name, c.name, stuck))
	}
	if len(parked) > 0 && (c.sections != sections || c.attempt != attempt) {
		// Its section ended, with requests in its line: it passed the
		// lock to the oldest in memory, or released it and handed that
		// one the line (as it does when its Obtain fails). Either way
		// that one runs beside c, to its next command.
		w.settleAny(parked)
	}
}

// let lets g go: its command to Redis, or its sleeper's next try.
func (g *gate) let(w *world) {
	if g.wake != nil {
		g.wake <- w.time()
		return
	}
	g.open <- true
}

// after is the waits' timer in the explorer (Options.After): the
// waiter that asks sleeps at a gate until the search delivers it. A
// world that has ended cancels its waiters' contexts.
func (ex *Explorer) after(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	w := ex.current.Load()
	if w == nil || w.closed.Load() || w.running == nil {
		return ch
	}
	c := w.running // a waiter sleeps only after its own try was delivered
	w.send(event{kind: evGate, c: c, g: &gate{c: c, wake: ch, open: make(chan bool, 1), ctx: context.Background()}})
	return ch
}

// sleeping says c waits between two tries until the search wakes it.
func (c *client) sleeping() bool { return c.gate != nil && c.gate.wake != nil || c.asleep() }

// parked are the clients waiting in their process's line: started, in
// Obtain, with nothing held at a gate.
func (w *world) parked() []*client {
	if !w.ex.target.Line {
		return nil
	}
	var out []*client
	for _, c := range w.clients {
		if len(w.strikes(c)) > 1 && c.attempt > 0 && !c.crashed && !c.finished && c.phase == phaseObtain && c.gate == nil {
			out = append(out, c)
		}
	}
	return out
}

// notePasses draws, after a step, each client of was (parked before it)
// that holds the lock now: the lock was passed to it in memory.
func (w *world) notePasses(was []*client) {
	for _, c := range was {
		if c.phase == phaseSection {
			w.passes++
			w.step(c.id, "← passed the lock in memory", "", "holds the lock", w.snapshot())
		}
	}
}

// strikes is every client a fault on c strikes: its process's.
func (w *world) strikes(c *client) []*client {
	var out []*client
	for _, o := range w.clients {
		if o.proc == c.proc {
			out = append(out, o)
		}
	}
	return out
}

// settleAny waits until one of cs has stopped at its next gate (or
// ended), and every new watchdog waits.
func (w *world) settleAny(cs []*client) {
	// What the events taken in so far say (the driver's own fields).
	done := slices.ContainsFunc(cs, func(c *client) bool { return c.gate != nil || c.finished })
	deadline := time.After(stuck)
	for !done || w.busyTickers() {
		select {
		case ev := <-w.events:
			w.handle(ev)
			done = done || slices.Contains(cs, ev.c) && (ev.kind == evDone || ev.kind == evGate && !ev.g.wd)
		case <-deadline:
			panic(fmt.Sprintf("lockcheck: %s: nobody in the line moved on in %s", w.ex.target.Name, stuck))
		}
	}
}

// stopped says c's program waits at a gate, or has ended, with no
// command in flight and no watchdog starting.
func (w *world) stopped(c *client) bool {
	return (c.gate != nil || c.finished) && w.inflight.Load() == 0 && !w.busyTickers()
}
