package engine

import (
	"fmt"
	"time"
)

// A target on masters sends each call to its masters from a goroutine
// per master, all at once, and its program waits for their answers: more
// than one goroutine of a client runs after a step, and the program's
// wait is not at a gate. The world knows every one of them, so that a
// step ends when all are accounted for, not when they look still:
//
//   - the program is at its own gate, or done, or waits in a round whose
//     every answer delivered so far it has taken (the lab's Redlock says
//     so through lock.RoundWatch: Begin before it asks, Wait before each
//     wait for an answer);
//   - each master a round asks has the round's command held at its gate,
//     or answered, or, where the round says its call waits for the
//     client's earlier call to that master (a release waits for the SET
//     it removes), that earlier command is still held.
//
// A library's rounds (redsync's, Target.WaitsAll) report nothing: each
// asks every master and waits for every answer, so a round begins with
// its first command at a gate and the program waits in it while any of
// its answers is still to come. What the goroutines do after a round has
// their answers (hand them back, end) changes nothing the search reads.

// round is one call a client's program sent to its masters.
type round struct {
	asked    []bool  // the masters it asks
	after    []bool  // where its call waits for the client's earlier one
	gates    []*gate // its command to each, once at its gate
	answered []bool
	produced int  // answers handed back to the program so far
	taken    int  // answers the program had taken at its last Wait; -1: none yet
	library  bool // a library's round (Target.WaitsAll): no Wait reports
}

func newRound(asked, after []bool, library bool) *round {
	n := len(asked)
	return &round{asked: asked, after: after, gates: make([]*gate, n), answered: make([]bool, n), taken: -1, library: library}
}

// complete says every master asked has answered.
func (r *round) complete() bool {
	for i, a := range r.asked {
		if a && !r.answered[i] {
			return false
		}
	}
	return true
}

// roundWatch is a client's lock.RoundWatch: its program's reports, as
// events of the world, so that they are taken in the order of the
// commands they precede.
type roundWatch struct{ c *client }

func (r roundWatch) Begin(asked, after []bool) {
	r.c.w.send(event{kind: evRoundBegin, c: r.c, r: newRound(asked, after, false)})
}

func (r roundWatch) Wait(taken int) {
	r.c.w.send(event{kind: evRoundWait, c: r.c, taken: taken})
}

// accounted says each goroutine of c's round has stopped: its command at
// its gate, or answered, or waiting, as the round said it would, behind
// an earlier one still held.
func (r *round) accounted(c *client) bool {
	for i, a := range r.asked {
		switch {
		case !a || r.answered[i]:
		case r.gates[i] != nil:
			if c.nodes[i] != r.gates[i] {
				return false // delivered: on its way to the master or back
			}
		case !r.after[i] || c.nodes[i] == nil || c.nodes[i].round == r:
			return false // not at its gate yet
		}
	}
	return true
}

// stillOnMasters says none of c's goroutines can move until the search
// delivers something.
func (w *world) stillOnMasters(c *client) bool {
	r := c.round
	if r != nil && !r.accounted(c) {
		return false
	}
	switch {
	case c.finished || c.gate != nil:
		return true
	case r == nil:
		return false
	case r.library:
		return !r.complete()
	}
	return r.taken >= 0 && r.taken == r.produced
}

// settleMasters takes in the world's events until c is still
// (stillOnMasters): every change it reads is an event, so it waits on
// them, not on time.
func (w *world) settleMasters(c *client) {
	deadline := time.NewTimer(stuck)
	defer deadline.Stop()
	for {
		select {
		case ev := <-w.events:
			w.handle(ev)
			continue
		default:
		}
		if w.stillOnMasters(c) {
			return
		}
		select {
		case ev := <-w.events:
			w.handle(ev)
		case <-deadline.C:
			panic(fmt.Sprintf("lockcheck: %s: client %s's goroutines not accounted for after %s", w.ex.target.Name, c.name, stuck))
		}
	}
}

// handleRound takes in an event of a target on masters.
func (w *world) handleRound(ev event) {
	c := ev.c
	switch ev.kind {
	case evRoundBegin:
		c.round = ev.r
	case evRoundWait:
		if c.round != nil {
			c.round.taken = ev.taken
		}
	case evGate: // a command for a master
		if w.ex.target.WaitsAll && (c.round == nil || c.round.complete()) {
			all := make([]bool, len(w.ex.masters))
			for i := range all {
				all[i] = true
			}
			c.round = newRound(all, make([]bool, len(all)), true)
		}
		if r := c.round; r != nil && r.gates[ev.g.node-1] == nil && !r.answered[ev.g.node-1] && r.asked[ev.g.node-1] {
			ev.g.round, r.gates[ev.g.node-1] = r, ev.g
		}
	case evAnswered:
		if r := ev.g.round; r != nil {
			r.answered[ev.g.node-1] = true
			r.produced++
		}
	}
}

// midRound says a live client is inside a library's round (asked, not
// every answer in).
func (w *world) midRound() bool {
	if !w.ex.target.WaitsAll {
		return false
	}
	for _, c := range w.clients {
		if !c.crashed && c.round != nil && !c.round.complete() {
			return true
		}
	}
	return false
}
