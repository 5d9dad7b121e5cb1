package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A world is one run of the clients against the gated Redis: built fresh
// for every schedule the search tries (a schedule is replayed from the
// start: goroutines cannot be copied), driven one step at a time. At any
// moment at most one goroutine of the world runs: the one whose command
// was just delivered, or whose watchdog just ticked. The others wait at a
// gate (their next command held back), on a tick, or are done. So each
// run of a schedule does the same thing. (A Redlock's rounds run a
// goroutine per master at once: there a step ends when each of them is
// accounted for, see rounds.go.)
type world struct {
	ex      *Explorer
	now     time.Time // virtual: Redis's clock, and each client's (plus its skew)
	epoch   time.Time // time 0 of the diagram
	clients []*client
	events  chan event
	closed  atomic.Bool
	halt    chan struct{}   // closed with the world: everything blocked lets go
	running *client         // whose goroutine runs now (a new watchdog is its process's)
	ctx     context.Context // the clients' programs': ended with the world where a line may hold them (line.go)
	cancel  context.CancelFunc
	passes  int // sections passed in memory (line.go)
	tickers []*vticker
	trace   []Step
	names   map[string]string // token -> its name in the diagram
	// learned maps a target's own tokens to UUIDs (tokens.go); untokens
	// replaces them, made again when one is learned.
	learned  map[string]string
	untokens *strings.Replacer
	used     budget
	moved    bool      // a step other than a skew was taken
	shown    shot      // Redis after the last step shown
	stepNo   int       // the schedule's steps taken; 0 while probing
	traced   bool      // the steps are shown: each gated command's callers are read (site.go)
	business *Business // the explorer's (Target.Business)
	// asleepLog is, after the start and after each step, which clients
	// are asleep (bubble.go; Result.Asleep).
	asleepLog []uint8
	applied   int // steps applied (apply), for the replay's Asleep
	// inflight counts the commands on their way to Redis or back (not
	// held at a gate): on a real Redis, a goroutine waiting for its
	// answer is not running, yet the world is not still (line.go).
	inflight atomic.Int32

	// In a bubble (bubble.go): the world's own connections; abandoned
	// once it has ended (events are then dropped, not waited for);
	// afterClose counts the commands sent since, limbo parks a goroutine
	// that goes on sending.
	conns      []*redis.Client
	abandoned  atomic.Bool
	afterClose atomic.Int32
	parkedOnce atomic.Bool
	limbo      chan struct{}
}

// send hands ev to the search; once the world is abandoned (a bubble's
// ended world), an event nobody will read is dropped.
func (w *world) send(ev event) {
	if w.abandoned.Load() {
		select {
		case w.events <- ev:
		default:
		}
		return
	}
	w.events <- ev
}

// time is the world's now: virtual, or on a real Redis the real one.
func (w *world) time() time.Time {
	if w.ex.real || w.ex.bubble {
		return time.Now()
	}
	return w.now
}

// realMargin is how far past an instant a replay on a real Redis sleeps,
// so that the server has seen it pass.
const realMargin = 5 * time.Millisecond

// budget counts the faults and the time steps a schedule has spent.
type budget struct{ faults, ticks int }

type evKind int

const (
	evGate       evKind = iota // a command waits at its gate
	evDone                     // a client's program returned
	evTickNew                  // a watchdog was started
	evTickWait                 // a watchdog waits for its tick
	evTickStop                 // a watchdog ended
	evGateGone                 // a held command's context ended: it was never sent
	evAnswered                 // a held command, delivered, has its answer (rounds.go)
	evRoundBegin               // a client's program begins a round on its masters
	evRoundWait                // ... and waits for an answer in it
)

type event struct {
	kind  evKind
	c     *client
	g     *gate
	tk    *vticker
	r     *round // evRoundBegin: the round begun
	taken int    // evRoundWait: the answers the round has taken
}

// gate is one command (or one pipeline) held back until the search
// delivers it.
type gate struct {
	c    *client
	node int  // where it goes: 0 the client's server, m master m
	wd   bool // sent by the client's watchdog, not its program
	cmds []redis.Cmder
	open chan bool // true: deliver it; false: the world ended
	// lost: the commands run, and their sender gets ErrReplyLost instead
	// of their replies (set before open is sent to).
	lost bool
	// cancel: the search cancels its sender's Obtain or Release context
	// before the commands are sent, or after they ran (cancel.go).
	cancel cancelWhen
	unsent bool // cancelled before it was sent: it never reached Redis
	// wake, for a waiter's sleep between two tries (Options.After), is
	// what delivering it fires: its next try is the step's command.
	wake chan time.Time
	sent chan struct{} // closed once delivered and answered
	ctx  context.Context
	// answers are cmds' replies as the sender saw them, read before sent
	// is closed: go-redis sets a command's error again once the hook
	// returns, in the sender's goroutine, which may still run (a Redlock
	// round's worker) while the search records the step.
	answers []string
	round   *round   // a command for a master: the round it belongs to (rounds.go)
	callers *callers // who sent it, when the world is traced (site.go)
}

// renewal is c's watchdog's held renewal, unless its holder has stopped
// the watchdog meanwhile (the renewal will never be sent).
func (c *client) renewal() *gate {
	if g := c.wdGate; g != nil && g.ctx.Err() == nil {
		return g
	}
	return nil
}

// mainKey marks the context of a client's program; a command without it
// comes from the client's watchdog.
type mainKey struct{}

// errEnded answers the commands of a world that has ended.
var errEnded = errors.New("lockcheck: the world ended")

// vticker is a watchdog's ticker on virtual time.
type vticker struct {
	w     *world
	c     *client
	every time.Duration
	born  time.Time // when its lease was taken: a cohort passes it for half a lease
	due   time.Time
	tick  chan struct{}
	state tickState
	ctx   context.Context // the watchdog's, once it waits: stopped when done
}

// live says the watchdog has not ended, nor been told to (its holder
// halts it before releasing; the goroutine ends on its own time).
func (t *vticker) live() bool {
	return t.state != tickStopped && (t.ctx == nil || t.ctx.Err() == nil)
}

type tickState int

const (
	tickStarting tickState = iota // made, its goroutine not yet waiting
	tickWaiting
	tickRunning // ticked: renewing
	tickGated   // its renewal held at a gate
	tickStopped
)

func (t *vticker) Wait(ctx context.Context) bool {
	if ctx.Err() != nil || t.w.closed.Load() {
		return false
	}
	t.ctx = ctx
	t.w.send(event{kind: evTickWait, tk: t})
	select {
	case <-ctx.Done():
		return false
	case <-t.w.halt:
		return false
	case <-t.tick:
		return true
	}
}

func (t *vticker) Stop() { t.w.send(event{kind: evTickStop, tk: t}) }

// ticker is the watchdogs' Options.Ticker in the explorer: a ticker on
// the virtual time of the world ex drives now (ex.current).
func (ex *Explorer) ticker(every time.Duration) Ticker {
	w := ex.current.Load()
	if w == nil || w.closed.Load() {
		return closedTicker{}
	}
	t := &vticker{w: w, c: w.running.process(), born: w.time(), every: every, due: w.time().Add(every), tick: make(chan struct{}, 1)}
	w.send(event{kind: evTickNew, tk: t})
	return t
}

type closedTicker struct{}

func (closedTicker) Wait(context.Context) bool { return false }
func (closedTicker) Stop()                     {}

// newWorld starts the clients of one schedule, each up to its first
// command.
func (ex *Explorer) newWorld(n int, skews []int) *world {
	w := &world{ex: ex, epoch: epoch, now: epoch, events: make(chan event, 256), halt: make(chan struct{}), business: ex.business, names: map[string]string{}, traced: !ex.quiet}
	w.ctx, w.cancel = context.Background(), func() {}
	if ex.target.Line || ex.bubble {
		w.ctx, w.cancel = context.WithCancel(context.Background())
	}
	if ex.real || ex.bubble {
		w.epoch = time.Now().Truncate(time.Millisecond)
		w.now = w.epoch
	}
	if ex.bubble {
		w.limbo = make(chan struct{})
	}
	ex.kv.FlushAll()
	ex.kv.SetTime(w.epoch)
	for _, k := range slices.Sorted(maps.Keys(ex.business.Init)) {
		if err := ex.kv.Set(k, ex.business.Init[k]); err != nil {
			panic(err)
		}
	}
	ex.current.Store(w)
	for i := range n {
		c := &client{w: w, id: i, name: string(rune('A' + i))}
		c.proc = w.processOf(c)
		if ex.bubble {
			c.rdb = ex.worldClient(w, i)
		} else {
			c.rdb = ex.rdbs[i]
			ex.hooks[i].w.Store(w)
		}
		if ex.target.Masters > 0 {
			c.locker, c.nodes = ex.lockers[i], make([]*gate, ex.target.Masters)
			for _, h := range ex.nodeHooks[i*ex.target.Masters : (i+1)*ex.target.Masters] {
				h.w.Store(w)
			}
		} else if c.proc != c {
			c.locker = c.proc.locker // a request of the same process
		} else {
			c.locker = ex.target.New(c.rdb, Env{TTL: ex.cfg.TTL, Now: c.clock, NewTicker: ex.ticker, After: ex.after})
		}
		w.clients = append(w.clients, c)
	}
	w.shown = w.snapshot()
	for _, i := range skews {
		c := w.clients[i]
		w.stepNo++
		w.used.faults++
		c.skew += ex.cfg.TTL + ex.cfg.TTL/2
		w.step(c.id, fmt.Sprintf("** clock runs %dms ahead **", c.skew.Milliseconds()), "", "", w.snapshot())
	}
	for _, c := range w.clients {
		w.running = c
		w.move(c, false, func() { go c.run() })
	}
	w.noteSleepers()
	return w
}

// settle waits until the goroutine just woken (c's program, or c's
// watchdog when wd) has stopped again, and every new watchdog waits.
func (w *world) settle(c *client, wd bool) {
	if w.ex.bubble {
		w.quiesce()
		return
	}
	if w.ex.real && w.expectAsleep(c) && !wd {
		// The search saw it fall asleep here (Result.Asleep): it sends
		// nothing until it wakes, on the real clock.
		w.drain()
		return
	}
	done := false
	for !done || w.busyTickers() {
		var ev event
		select {
		case ev = <-w.events:
		case <-time.After(stuck):
			panic(fmt.Sprintf("lockcheck: %s %s: no answer from client %s in %s", w.ex.target.Name, w.ex.cfg.Faults, c.name, stuck))
		}
		w.handle(ev)
		switch {
		case ev.kind == evGate && ev.c == c && ev.g.wd == wd:
			done = true
		case ev.kind == evDone && ev.c == c && !wd:
			done = true
		case wd && (ev.kind == evTickWait || ev.kind == evTickStop) && ev.tk.c == c:
			done = true
		}
	}
}

// stuck is how long settle waits for a goroutine that should stop at
// its next gate within microseconds: only a bug takes this long.
const stuck = 5 * time.Second

func (w *world) busyTickers() bool {
	for _, t := range w.tickers {
		if t.state == tickStarting || t.state == tickRunning {
			return true
		}
	}
	return false
}

// setTickers moves c's watchdogs in state from to state to.
func (w *world) setTickers(c *client, from, to tickState) {
	for _, t := range w.tickers {
		if t.c == c && t.state == from {
			t.state = to
		}
	}
}

func (w *world) handle(ev event) {
	switch ev.kind {
	case evGate:
		if w.closed.Load() {
			ev.g.open <- false
			return
		}
		if w.ex.target.Tokens && ev.g.cmds != nil {
			w.learn(ev.g.cmds)
		}
		if ev.g.node > 0 {
			w.handleRound(ev)
			ev.c.nodes[ev.g.node-1] = ev.g
			return
		}
		if ev.g.wd {
			ev.c.wdGate = ev.g
			w.setTickers(ev.c, tickRunning, tickGated)
		} else {
			ev.c.gate = ev.g
		}
	case evGateGone:
		if ev.c.wdGate == ev.g {
			ev.c.wdGate = nil
			w.setTickers(ev.c, tickGated, tickRunning)
		}
		if ev.c.gate == ev.g {
			ev.c.gate = nil
		}
		if ev.g.node > 0 && ev.c.nodes[ev.g.node-1] == ev.g {
			ev.c.nodes[ev.g.node-1] = nil
		}
	case evAnswered, evRoundBegin, evRoundWait:
		w.handleRound(ev)
	case evDone:
		ev.c.finished = true
	case evTickNew:
		w.tickers = append(w.tickers, ev.tk)
	case evTickWait:
		ev.tk.state = tickWaiting
	case evTickStop:
		ev.tk.state = tickStopped
	}
}

// deliver lets c's held command (its watchdog's when wd) go to Redis, and
// waits for what c does next.
func (w *world) deliver(c *client, wd bool) {
	was := w.parked()
	defer w.notePasses(was)
	if !wd && c.gate.cmds == nil {
		// The start of an attempt: let the client read its clock and
		// send its first command, and deliver that, in one step.
		g := c.gate
		c.gate = nil
		w.running = c
		w.move(c, false, func() { g.let(w) })
		if c.gate == nil || c.gate.cmds == nil {
			c.fate = 0 // no command to cancel: the step is a start
			if w.ex.target.Line && c.phase == phaseObtain && c.gate == nil && !c.finished {
				w.step(c.id, "waits in its process's line", "", "", w.snapshot())
			}
			return
		}
	}
	g := c.gate
	if wd {
		g = c.wdGate
		c.wdGate = nil
		w.setTickers(c, tickGated, tickRunning)
	} else {
		c.gate = nil
		w.markCancel(c, g)
		w.markLost(c, g)
	}
	phase, att := c.phase, c.attempt
	w.running = c
	w.move(c, wd, func() { g.open <- true })
	c.delivered++
	w.record(c, g, phase, att)
}

// advance moves virtual time to t: Redis's clock (keys expire), every
// client's clock, and the watchdogs that fall due tick once, except those
// of frozen (a paused process renews nothing).
func (w *world) advance(t time.Time, frozen *client) {
	switch {
	case w.ex.real:
		time.Sleep(time.Until(t) + realMargin)
	case w.ex.bubble:
		w.sleepUntil(t)
	default:
		w.now = t
		w.ex.kv.SetTime(t)
	}
	for _, tk := range w.tickers {
		if tk.state != tickWaiting || !tk.live() || tk.c.crashed || tk.c == frozen || tk.due.After(t) || tk.c.renewal() != nil {
			continue
		}
		for !tk.due.After(t) {
			tk.due = tk.due.Add(tk.every)
		}
		tk.state = tickRunning
		w.running = tk.c
		w.move(tk.c, true, func() { tk.tick <- struct{}{} })
	}
}

// close ends the world: every held command is answered with an error (a
// script with 0), every watchdog stops, and close returns once all of
// the world's goroutines have.
func (w *world) close() {
	w.closed.Store(true)
	close(w.halt)
	w.cancel() // a request waiting in its process's line, or asleep, gives up
	for _, c := range w.clients {
		for _, g := range append([]*gate{c.gate, c.wdGate}, c.nodes...) {
			if g != nil && g.wake == nil {
				g.open <- false
			}
		}
		c.gate, c.wdGate = nil, nil
		clear(c.nodes)
	}
	if w.ex.bubble {
		w.endBubble()
		w.ex.current.CompareAndSwap(w, nil)
		return
	}
	deadline := time.After(stuck)
	for !w.allEnded() {
		select {
		case ev := <-w.events:
			w.handle(ev)
		case <-deadline:
			panic("lockcheck: a world's goroutines did not end")
		}
	}
	ex := w.ex
	ex.current.CompareAndSwap(w, nil)
}

func (w *world) allEnded() bool {
	for _, c := range w.clients {
		if !c.finished {
			return false
		}
	}
	for _, t := range w.tickers {
		if t.state != tickStopped {
			return false
		}
	}
	return true
}
