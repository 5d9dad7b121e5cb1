package explore

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

// Redlock's masters are databases 1 to N of the explorer's Redis (the
// stock stays in database 0): independent keyspaces, as independent
// masters are, each with its own gate. A Redlock sends to its masters
// from a goroutine per master, all at once, so more than one goroutine of
// a client may wait at a gate: after a step the world waits until none
// of its goroutines can run (quiesce), not for one goroutine's next
// event, and the search chooses which master's command goes next.

// masterKV reads one master's keys directly (not a step).
type masterKV interface {
	Keys() []string
	Type(k string) string
	Get(k string) (string, error)
	Exists(k string) bool
	TTL(k string) time.Duration
	FlushDB()
}

// multi says the target runs on masters, not on one server.
func (w *world) multi() bool { return w.ex.target.Masters > 0 }

// noNodeTimeout is the per-master timeout the explorer gives Redlock: it
// never fires, so that whether a master answers in time is the search's
// choice (its order of delivery), not the machine's speed.
const noNodeTimeout = time.Hour

func newRedlock(masters []redis.Cmdable, o lock.Options) lock.Locker {
	return lock.NewRedlock(masters, o, lock.RedlockOptions{NodeTimeout: noNodeTimeout})
}

// addMasters connects every client to the masters, each connection with
// a gate of its own, and makes each client's Locker once for the
// explorer: its worker goroutines then serve every world in turn instead
// of piling up, one set per world.
func (ex *Explorer) addMasters(addr string, dial dialer) {
	n := ex.target.Masters
	for i := range ex.cfg.MaxClients {
		var cmdables []redis.Cmdable
		for m := range n {
			h := &gateHook{ex: ex, id: i, node: m + 1}
			rdb := redis.NewClient(&redis.Options{
				Addr: addr, Password: ex.cfg.password, Dialer: dial, DB: m + 1, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4,
				MaintNotificationsConfig: noMaint(),
			})
			rdb.AddHook(h)
			ex.masterRdbs = append(ex.masterRdbs, rdb)
			ex.nodeHooks = append(ex.nodeHooks, h)
			cmdables = append(cmdables, rdb)
		}
		id := i
		clock := func() time.Time {
			if w := current.Load(); w != nil && id < len(w.clients) {
				return w.clients[id].clock()
			}
			return epoch
		}
		ex.lockers = append(ex.lockers, ex.target.NewMasters(cmdables, lock.Options{TTL: ex.cfg.TTL, Clock: clock}))
	}
}

// nodeChoices are c's next steps on a target on masters: its command
// for its own server, or one for a master, or, at the start of an
// attempt, the start with the first SET's master; of masters alike
// (same keys, same commands held for each client) only the first, as the
// others lead to the same state up to the masters' order.
func (w *world) nodeChoices(c *client) []Choice {
	var out []Choice
	start := c.gate != nil && c.gate.cmds == nil
	if c.gate != nil && !start {
		out = append(out, Choice{Kind: Deliver, Client: c.id})
	}
	seen := map[string]bool{}
	for m := range w.ex.masters {
		if !start && c.nodes[m] == nil {
			continue
		}
		k := w.masterClass(m)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Choice{Kind: Deliver, Client: c.id, Node: m + 1})
	}
	return out
}

// restartChoices are the masters that may restart: those that hold the
// lock, one of each kind.
func (w *world) restartChoices() []Choice {
	var out []Choice
	seen := map[string]bool{}
	for m, kv := range w.ex.masters {
		if !kv.Exists(lockKey) {
			continue
		}
		if k := w.masterClass(m); !seen[k] {
			seen[k] = true
			out = append(out, Choice{Kind: RestartIt, Client: -1, Node: m + 1})
		}
	}
	return out
}

// masterClass is master m's keys and the commands held for it, raw.
func (w *world) masterClass(m int) string {
	kv := w.ex.masters[m]
	var b strings.Builder
	for _, k := range kv.Keys() {
		fmt.Fprintf(&b, "%s %s ttl=%d;", k, must(kv.Get(k)), kv.TTL(k).Milliseconds())
	}
	for _, c := range w.clients {
		b.WriteString("|")
		if g := c.nodes[m]; g != nil && !c.crashed {
			b.WriteString(rawCmds(g.cmds))
		}
	}
	return b.String()
}

// deliverNode takes c's step at node: its command for its own server
// (0), or for master node; at the start of an attempt, the start (T1 is
// read, a SET waits for each master) and the SET for master node, as
// one step. It waits until the world is still again.
func (w *world) deliverNode(c *client, node int) {
	if g := c.gate; g != nil && g.cmds == nil {
		c.gate = nil
		w.running = c
		g.open <- true
		// The attempt reads T1 and sends a SET to every master, then
		// waits for their answers: still once they all wait at their
		// gates (on a real Redis, quiesce looks).
		if w.ex.real || !w.await(func() bool { return !slices.Contains(c.nodes, nil) }) {
			w.quiesce(c)
		}
		c.started, c.hist, c.histAttempt = w.time(), nil, c.attempt
		c.setAnswers, c.setYes = 0, 0
		if node == 0 || c.nodes[node-1] == nil {
			return
		}
	}
	var g *gate
	if node == 0 {
		g, c.gate = c.gate, nil
	} else {
		g, c.nodes[node-1] = c.nodes[node-1], nil
	}
	phase, att := c.phase, c.attempt
	w.running = c
	g.open <- true
	if !w.ex.real && isSetNX(g.cmds) && w.await(func() bool {
		select {
		case <-g.sent:
			return true
		default:
			return false
		}
	}) {
		// An answer to the attempt's SETs: the round cannot end before
		// every master has answered or a quorum said yes, and until it
		// ends the program does nothing the search can see.
		c.setAnswers++
		if b, ok := g.cmds[0].(*redis.BoolCmd); ok && b.Val() {
			c.setYes++
		}
		if c.setAnswers >= len(w.ex.masters) || c.setYes >= lock.Quorum(len(w.ex.masters)) {
			w.quiesce(c)
		}
	} else {
		w.quiesce(c)
	}
	c.delivered++
	w.record(c, g, phase, att)
}

// quiesce waits until none of the world's goroutines can run: each is
// held at a gate, waits for another (a Redlock round for its masters'
// answers, a request in its process's line), or is done; then it takes
// in their events. With c, it returns as soon as c's program stopped at
// its next gate and nothing is in flight; with nil, only once the stacks
// say so.
func (w *world) quiesce(c *client) {
	deadline := time.Now().Add(stuck)
	still, moved := 0, false
	for spins := 0; ; spins++ {
		moved = w.drain(c) || moved
		if moved && !w.ex.real && w.inflight.Load() == 0 && !w.busyTickers() {
			// c's program has stopped at its next gate, or ended: it
			// waits for no master, and what its workers still do
			// (hand back an answer no one waits for) changes nothing.
			return
		}
		if !w.ex.real && (spins < 30 || c != nil && spins%4 != 0) {
			// Most steps end with the program at its next gate: give
			// it the time to get there before looking at the stacks,
			// and look only now and then while it may still get there.
			runtime.Gosched()
			continue
		}
		quiet := w.inflight.Load() == 0 && !goroutinesBusy() // a command in flight: no need to look
		moved = w.drain(c) || moved
		if quiet {
			still++
		} else {
			still = 0
		}
		if still == 2 || still == 1 && !w.ex.real {
			// In process every goroutine that is not at a gate runs
			// or waits on another: stopped once is stopped. On a real
			// Redis one may be between its answer and its next wait.
			return
		}
		if time.Now().After(deadline) {
			panic(fmt.Sprintf("explore: %s: the world's goroutines still run after %s", w.ex.target.Name, stuck))
		}
		if spins < 20 || quiet {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// await takes in the world's events until done says so (true), or
// gives up after a while (false): quiesce then looks.
func (w *world) await(done func() bool) bool {
	deadline := time.Now().Add(stuck / 5)
	for spins := 0; ; spins++ {
		w.drain(nil)
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if spins < 50 {
			runtime.Gosched()
		} else {
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// isSetNX says cmds is a Redlock attempt's SET NX to a master.
func isSetNX(cmds []redis.Cmder) bool {
	if len(cmds) != 1 || !strings.EqualFold(cmds[0].Name(), "set") {
		return false
	}
	for _, a := range cmds[0].Args() {
		if strings.EqualFold(argString(a), "nx") {
			return true
		}
	}
	return false
}

// drain takes in the events waiting, and says whether c's program
// stopped at a gate of its own (not a master's) or ended.
func (w *world) drain(c *client) bool {
	moved := false
	for {
		select {
		case ev := <-w.events:
			w.handle(ev)
			moved = moved || c != nil && ev.c == c && (ev.kind == evDone || ev.kind == evGate && ev.g.node == 0 && !ev.g.wd)
		default:
			return moved
		}
	}
}

var stackBuf = make([]byte, 1<<20)

var schedSample = []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}

// schedBusy is the scheduler's count of goroutines ready to run, cheap
// to read but of the whole process: one or more says busy (or the
// runtime's own at work: the caller waits and looks again); none, that
// goroutinesBusy must look at the stacks to be sure.
func schedBusy() bool {
	metrics.Read(schedSample)
	v := schedSample[0].Value
	return v.Kind() == metrics.KindUint64 && v.Uint64() > 0
}

// goroutinesBusy says whether a goroutine of a world (worldFrames), other
// than the caller, may move on its own: it does not wait for another
// goroutine (blocked). One driver at a time (running) uses it.
func goroutinesBusy() bool {
	if schedBusy() {
		return true
	}
	n := runtime.Stack(stackBuf, true)
	for n == len(stackBuf) {
		stackBuf = make([]byte, 2*len(stackBuf))
		n = runtime.Stack(stackBuf, true)
	}
	dump := stackBuf[:n]
	first := true
	for len(dump) > 0 {
		block := dump
		if i := bytes.Index(dump, []byte("\n\n")); i >= 0 {
			block, dump = dump[:i], dump[i+2:]
		} else {
			dump = nil
		}
		if first { // the caller's own
			first = false
			continue
		}
		head := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			head = block[:i]
		}
		if blocked(head) {
			continue
		}
		for _, f := range worldFrames {
			if bytes.Contains(block, f) {
				return true
			}
		}
	}
	return false
}

// waits are the states of a goroutine that waits for another goroutine
// (or for Redis, inside a command: inflight counts those). Any other
// state may end on its own: runnable or running, in a system call,
// asleep, or held by the garbage collector (waiting to assist it,
// suspended while it scans the stack, or an allocation waiting for the
// world the collector stops: "semacquire"). Under the race detector and a
// busy CPU those last long enough for a world taken for still to move on
// after the search has read it.
var waits = []string{
	"chan receive", "chan send", "select", "select (no cases)",
	"chan receive (nil chan)", "chan send (nil chan)", "IO wait",
	"sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock",
	"sync.WaitGroup.Wait", "sync.Cond.Wait",
}

// blocked says whether a goroutine's header line ("goroutine 7 [chan
// receive, 2 minutes]:") names one of waits.
func blocked(head []byte) bool {
	i := bytes.IndexByte(head, '[')
	if i < 0 {
		return false
	}
	state := head[i+1:]
	if j := bytes.IndexAny(state, ",]"); j >= 0 {
		state = state[:j]
	}
	return slices.Contains(waits, string(state))
}

// worldFrames mark the goroutines a world's steps run: the explorer's,
// the lock package's (a Redlock's rounds and their workers), the Redis
// client's (a new connection is dialled on a goroutine of its own while
// the command that wants it waits) and the in-process Redis's.
var worldFrames = [][]byte{
	[]byte("github.com/lockladder/lockladder/explore."),
	[]byte("github.com/lockladder/lockladder/lock."),
	[]byte("github.com/redis/go-redis/"),
	[]byte("github.com/alicebob/miniredis/"),
}

// masterLocks is the lock key on each master, for the diagram: the
// holder's token or -, then the lease left where one is held.
func (w *world) masterLocks() string {
	parts := make([]string, len(w.ex.masters))
	var ttl time.Duration
	for m, kv := range w.ex.masters {
		parts[m] = "-"
		if kv.Exists(lockKey) {
			parts[m] = must(kv.Get(lockKey))
			if t := kv.TTL(lockKey); t > ttl {
				ttl = t
			}
		}
	}
	s := strings.Join(parts, " ")
	if ttl > 0 {
		s += fmt.Sprintf(" (%dms)", ttl.Milliseconds())
	}
	return s
}

// mastersKey is the masters' part of a state, for clients in order: each
// master's keys and the commands each client holds for it, the masters
// sorted (they are interchangeable: which three said yes does not
// matter, that three did does). Tokens are named as names has them
// (from the clients' part), any other alike.
func (w *world) mastersKey(order []int, names map[string]int) string {
	ms := make([]string, len(w.ex.masters))
	for m, kv := range w.ex.masters {
		var b strings.Builder
		for _, k := range kv.Keys() {
			fmt.Fprintf(&b, "%s %s ttl=%d;", k, must(kv.Get(k)), kv.TTL(k).Milliseconds())
		}
		for _, i := range order {
			c := w.clients[i]
			b.WriteString("|")
			if g := c.nodes[m]; g != nil && !c.crashed {
				b.WriteString(rawCmds(g.cmds))
			}
		}
		ms[m] = w.canonWith(w.untoken(b.String()), names, false)
	}
	sort.Strings(ms)
	return strings.Join(ms, "\n")
}
