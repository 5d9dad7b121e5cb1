package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What a game shows of its world: each client's next step, the keys,
// the moves possible in words, and what stopped the lock from breaking.

// view is the game's state now.
func (w *world) view() Game {
	t := w.ex.target
	s := w.snapshot()
	g := Game{
		Lock: t.Name, Masters: t.Masters, Goal: Goal(t), NowMS: w.time().Sub(w.epoch).Milliseconds(),
		LeaseMS: w.ex.cfg.TTL.Milliseconds(), Stock: atoi(s.values[0]), Sold: atoi(s.values[1]),
		Holders: []string{}, Next: []Option{}, Trace: append([]Step{}, w.trace...), Keys: w.keyViews(),
	}
	for _, c := range w.clients {
		v := ClientView{Name: c.name, Phase: c.phase.String(), Crashed: c.crashed, SkewMS: c.skew.Milliseconds(), Holding: c.holding()}
		if c.finished {
			v.Phase = phaseDone.String()
		}
		v.Doing = doing[v.Phase]
		if c.crashed {
			v.Doing = "crashed: it does nothing more"
		}
		v.Next, v.Site = w.nextOf(c), w.siteOf(c)
		if v.Holding {
			g.Holders = append(g.Holders, c.name)
		}
		g.Clients = append(g.Clients, v)
	}
	g.LockNow = w.lockNow(s, g.Holders)
	if err := w.broken(); err != nil {
		g.Verdict = verdictOf(err)
		g.Explain = fmt.Sprintf("%s: %s, and one sale overwrote the other", g.Verdict, err)
		return g
	}
	for _, ch := range w.playable() {
		g.Next = append(g.Next, Option{Move: FormatMove(ch), Label: w.label(ch)})
	}
	g.Explain = w.whatStopped()
	return g
}

// doing says a client's phase in words.
var doing = map[string]string{
	phaseObtain.String():  "trying to take the lock",
	phaseSection.String(): "holds the lock: selling",
	phaseRelease.String(): "releasing the lock",
	phaseDone.String():    "done",
}

// lockNow says who holds the lock now: Redis's key (s.lock, as the
// diagram shows it) beside the clients that think they hold it.
func (w *world) lockNow(s shot, holders []string) string {
	lockKey := w.ex.target.key()
	var crashed []string
	for _, c := range w.clients {
		if c.crashed {
			crashed = append(crashed, c.name)
		}
	}
	both := strings.Join(holders, " and ")
	free := s.lock == "-"
	var key string
	if w.multi() {
		var parts []string
		free = true
		for m, db := range w.ex.masters {
			part := fmt.Sprintf("m%d none", m+1)
			if db.Exists(lockKey) {
				free = false
				part = fmt.Sprintf("m%d %s", m+1, w.display(must(db.Get(lockKey)), -1))
				if ttl := db.TTL(lockKey); ttl > 0 {
					part += fmt.Sprintf(" (%d ms left)", ttl.Milliseconds())
				}
			}
			parts = append(parts, part)
		}
		key = "the masters hold " + strings.Join(parts, ", ")
	} else if ttl := w.ex.kv.TTL(lockKey); ttl > 0 {
		key = fmt.Sprintf("the lock key holds %s and expires in %d ms", w.display(w.valueOf(w.ex.kv, lockKey), -1), ttl.Milliseconds())
	} else {
		key = fmt.Sprintf("the lock key holds %s with no TTL: it never expires", w.display(w.valueOf(w.ex.kv, lockKey), -1))
	}
	if free {
		where := "Redis holds no lock key"
		if w.multi() {
			where = "no master holds the lock key"
		}
		if len(holders) > 0 {
			return fmt.Sprintf("%s, yet %s still thinks it holds the lock: its key is gone (its lease ran out, or another client deleted it)", where, both)
		}
		return "nobody holds the lock: " + where
	}
	switch {
	case len(holders) > 1:
		return fmt.Sprintf("%s both think they hold the lock; %s", both, key)
	case len(holders) == 1:
		return fmt.Sprintf("%s holds the lock; %s", both, key)
	case len(crashed) > 0:
		return fmt.Sprintf("no live client holds the lock, yet %s: %s crashed and left it", key, strings.Join(crashed, " and "))
	}
	return key + "; no client has finished taking the lock yet"
}

// nextOf says what c's program is about to do.
func (w *world) nextOf(c *client) string {
	switch {
	case c.crashed:
		return "nothing: it crashed"
	case c.finished:
		return "nothing: done"
	case c.gate != nil && c.gate.wake != nil:
		return "sleeps before its next try"
	case c.gate != nil && c.gate.cmds == nil:
		return "starts an attempt to take the lock"
	case c.gate != nil:
		text := w.command(c, c.gate.cmds)
		return "sends " + text
	}
	var held []string
	for m, g := range c.nodes {
		if g != nil {
			text := w.command(c, g.cmds)
			held = append(held, fmt.Sprintf("m%d: %s", m+1, text))
		}
	}
	if len(held) > 0 {
		return "sends " + strings.Join(held, "; ")
	}
	if w.ex.target.Line && c.phase == phaseObtain {
		return "waits in its process's line"
	}
	return "waits"
}

// siteOf is the line of the lock's code that sent c's command waiting
// at its gate (for a rung on masters, its first master's), nil when none
// waits.
func (w *world) siteOf(c *client) *Site {
	if c.crashed || c.finished {
		return nil
	}
	if c.gate != nil {
		return c.gate.callers.site() // nil for the start of an attempt: no command yet
	}
	for _, g := range c.nodes {
		if g != nil {
			return g.callers.site()
		}
	}
	return nil
}

// command is cmds as the diagram shows them, before they are sent, with
// what they ask of Redis in words when that is one of the few things a
// lock and a sale ask (gloss).
func (w *world) command(c *client, cmds []redis.Cmder) string {
	text, _ := w.show(c, cmds, make([]string, len(cmds)))
	if g := w.gloss(cmds); g != "" {
		text += " (" + g + ")"
	}
	return text
}

// gloss says in words what cmds ask of Redis, "" when they are not one
// of the plain commands on the lock key or the sale's keys, or a script
// whose ScriptName says.
func (w *world) gloss(cmds []redis.Cmder) string {
	name := func(cmd redis.Cmder) (string, string, []string) {
		args := cmd.Args()
		if len(args) < 2 {
			return "", "", nil
		}
		rest := make([]string, 0, len(args)-2)
		for _, a := range args[2:] {
			rest = append(rest, strings.ToLower(argString(a)))
		}
		return strings.ToUpper(cmd.Name()), w.ex.keys.Replace(argString(args[1])), rest
	}
	if len(cmds) == 2 {
		op, key, _ := name(cmds[0])
		op2, key2, _ := name(cmds[1])
		if op == "SET" && key == "stock" && op2 == "INCR" && key2 == "sold" {
			return "write the stock it read, less one; count the sale"
		}
		return ""
	}
	if len(cmds) != 1 {
		return ""
	}
	op, key, rest := name(cmds[0])
	switch op {
	case "EVAL":
		return w.ex.scripts.says(w.ex.scripts.scriptName(argString(cmds[0].Args()[1])))
	case "EVALSHA":
		return w.ex.scripts.says(w.ex.scripts.name(argString(cmds[0].Args()[1])))
	}
	switch {
	case key == "stock" && op == "GET":
		return "read the stock"
	case key != "lock":
		return ""
	case op == "GET":
		return "read who holds the lock"
	case op == "SETNX", op == "SET" && slices.Contains(rest, "nx") && !slices.ContainsFunc(rest, func(a string) bool { return a == "px" || a == "ex" }):
		return "take the lock if it is free: no expiry"
	case op == "SET" && slices.Contains(rest, "nx"):
		return "take the lock if it is free, with a lease"
	case op == "PEXPIRE", op == "EXPIRE":
		return "give the lock a time to live"
	case op == "DEL":
		return "delete the lock, whoever holds it"
	case op == "GETSET":
		return "write a new expiry time, read the old one"
	}
	return ""
}

// label says what ch does, in words.
func (w *world) label(ch Choice) string {
	var c *client
	if ch.Client >= 0 && ch.Client < len(w.clients) {
		c = w.clients[ch.Client]
	}
	switch ch.Kind {
	case Deliver:
		if ch.Node > 0 {
			if g := c.nodes[ch.Node-1]; g != nil {
				text := w.command(c, g.cmds)
				return fmt.Sprintf("deliver %s's %s to m%d", c.name, text, ch.Node)
			}
			return fmt.Sprintf("%s starts an attempt, its first SET to m%d", c.name, ch.Node)
		}
		return fmt.Sprintf("%s %s", c.name, w.nextOf(c))
	case DeliverWD:
		text := w.command(c, c.renewal().cmds)
		return fmt.Sprintf("%s's watchdog sends %s", c.name, text)
	case Tick:
		due, what := w.nextDueWhat()
		if what == "" {
			return fmt.Sprintf("time passes to %dms (nothing falls due before)", due.Sub(w.epoch).Milliseconds())
		}
		return fmt.Sprintf("time passes to %dms, when %s", due.Sub(w.epoch).Milliseconds(), what)
	case CrashIt:
		return fmt.Sprintf("crash %s", c.name)
	case LoseIt:
		return fmt.Sprintf("%s's %s runs, its reply is lost: %s sees a timeout", c.name, w.command(c, c.gate.cmds), c.name)
	case CancelIt, CancelAfterIt:
		call := "Obtain"
		if c.phase == phaseRelease {
			call = "Release"
		}
		next := "its next command"
		if c.gate.cmds != nil {
			next = w.command(c, c.gate.cmds)
		}
		if ch.Kind == CancelIt {
			return fmt.Sprintf("cancel the context of %s's %s before %s is sent", c.name, call, next)
		}
		return fmt.Sprintf("%s's %s runs, then the context of its %s is cancelled before the reply", c.name, next, call)
	case PauseIt:
		// a watchdog only where the lock runs one: redlock's holder has none
		wd := ""
		if slices.ContainsFunc(w.tickers, func(t *vticker) bool { return t.c == c && t.live() }) {
			wd = " (its watchdog freezes with it)"
		}
		return fmt.Sprintf("pause %s for %dms, its lease and a millisecond%s", c.name, (w.ex.cfg.TTL + time.Millisecond).Milliseconds(), wd)
	case SkewIt:
		return fmt.Sprintf("run %s's clock %dms ahead, from the start", c.name, (w.ex.cfg.TTL + w.ex.cfg.TTL/2).Milliseconds())
	case RestartIt:
		return fmt.Sprintf("restart m%d empty (no AOF): it forgets the locks it granted", ch.Node)
	}
	return "?"
}

// keyViews are Redis's keys (and each master's) with values and TTLs.
func (w *world) keyViews() []KeyView {
	out := []KeyView{}
	read := func(server string, keys []string, get func(string) string, ttl func(string) time.Duration) {
		for _, k := range keys {
			out = append(out, KeyView{Server: server, Key: w.display(k, -1), Value: w.display(get(k), -1), TTLMS: ttl(k).Milliseconds()})
		}
	}
	m := w.ex.kv
	read("redis", m.Keys(), func(k string) string { return w.valueOf(m, k) }, m.TTL)
	for i, db := range w.ex.masters {
		read(fmt.Sprintf("m%d", i+1), db.Keys(), func(k string) string { return must(db.Get(k)) }, db.TTL)
	}
	return out
}

func (w *world) valueOf(m kv, k string) string {
	switch m.Type(k) {
	case "hash":
		fields, _ := m.HKeys(k)
		var parts []string
		for _, f := range fields {
			parts = append(parts, f+":"+m.HGet(k, f))
		}
		return "{" + strings.Join(parts, " ") + "}"
	case "list":
		l, _ := m.List(k)
		return "[" + strings.Join(l, " ") + "]"
	}
	return must(m.Get(k))
}

// stopped says what kept the moves so far from breaking the lock, from
// what the trace shows.
func (w *world) whatStopped() string {
	var refused []string
	for _, s := range w.trace {
		if s.Client >= 0 && strings.Contains(s.Event, "fenced-write") && strings.HasPrefix(s.Reply, "0") {
			refused = append(refused, fmt.Sprintf("the fence refused %s's stale write (step %d)", w.clients[s.Client].name, s.N))
		}
	}
	if len(refused) > 0 {
		return "not broken: " + strings.Join(refused, "; ")
	}
	if slices.ContainsFunc(w.clients, func(c *client) bool { return c.live() }) {
		return "not broken yet"
	}
	return "not broken: every section ran, and no sale was lost"
}
