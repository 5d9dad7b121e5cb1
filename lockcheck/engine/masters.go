package engine

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock's masters are databases 1 to N of the explorer's Redis (the
// stock stays in database 0): independent keyspaces, as independent
// masters are, each with its own gate. A Redlock sends to its masters
// from a goroutine per master, all at once, so more than one goroutine of
// a client may wait at a gate: after a step the world waits until each
// of them is accounted for (rounds.go), and the search chooses which
// master's command goes next.

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

// addMasters connects every client to the masters, each connection with
// a gate of its own, and makes each client's Locker once for the
// explorer: its worker goroutines then serve every world in turn instead
// of piling up, one set per world.
func (ex *Explorer) addMasters(addr string, dial dialer) {
	n := ex.target.Masters
	for i := range ex.cfg.MaxClients {
		var cmdables []redis.UniversalClient
		for m := range n {
			h := &gateHook{ex: ex, id: i, node: m + 1}
			rdb := redis.NewClient(&redis.Options{
				Network: ex.cfg.network, Addr: addr, Password: ex.cfg.password, Dialer: dial, DB: m + 1, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4,
				MaintNotificationsConfig: noMaint(),
			})
			rdb.AddHook(h)
			ex.masterRdbs = append(ex.masterRdbs, rdb)
			ex.nodeHooks = append(ex.nodeHooks, h)
			cmdables = append(cmdables, rdb)
		}
		id := i
		clock := func() time.Time {
			if w := ex.current.Load(); w != nil && id < len(w.clients) {
				return w.clients[id].clock()
			}
			return epoch
		}
		ex.lockers = append(ex.lockers, ex.target.NewMasters(cmdables, Env{TTL: ex.cfg.TTL, Now: clock, NewTicker: ex.ticker, After: ex.after}))
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
		if !kv.Exists(w.ex.target.key()) {
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
// one step. It waits until every goroutine of c's is accounted for
// again (rounds.go).
func (w *world) deliverNode(c *client, node int) {
	if g := c.gate; g != nil && g.cmds == nil {
		c.gate = nil
		w.running = c
		g.open <- true
		w.settleMasters(c)
		c.started, c.hist, c.histAttempt = w.time(), nil, c.attempt
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
	w.settleMasters(c)
	c.delivered++
	w.record(c, g, phase, att)
}

// await takes in the world's events until done says so (true), or
// gives up after stuck (false): done reads what no event says (how many
// wait in a process's line), so it looks again after each turn.
func (w *world) await(done func() bool) bool {
	deadline := time.Now().Add(stuck)
	for spins := 0; ; spins++ {
		w.drain()
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

// drain takes in the events waiting.
func (w *world) drain() {
	for {
		select {
		case ev := <-w.events:
			w.handle(ev)
		default:
			return
		}
	}
}

// masterLocks is the lock key on each master, for the diagram: the
// holder's token or -, then the lease left where one is held.
func (w *world) masterLocks() string {
	parts := make([]string, len(w.ex.masters))
	var ttl time.Duration
	for m, kv := range w.ex.masters {
		parts[m] = "-"
		if key := w.ex.target.key(); kv.Exists(key) {
			parts[m] = must(kv.Get(key))
			if t := kv.TTL(key); t > ttl {
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
