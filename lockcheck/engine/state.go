package engine

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Step is one step of a schedule as the diagram shows it.
type Step struct {
	N      int           // the step of the schedule (a pause takes two rows); 0 in a DEADLOCK's probe
	At     time.Duration // virtual time since the start
	Client int           // -1: no client (time passes)
	Event  string        // a command, or a fault, in the client's column
	Reply  string        // Redis's answer
	Note   string        // what the step did: holds, sale, crash...
	Lock   string        // the lock key after the step
	Stock  string        // the business's keys after the step (the sale's stock/sold)
	Site   *Site         // the line of the lock's code that sent the command; nil for a fault or time passing
}

// shot is what the diagram and the verdict read from Redis after a step.
type shot struct {
	values []string // the business's keys' (Business.Keys)
	lock   string
}

func (w *world) snapshot() shot {
	m := w.ex.kv
	var s shot
	for _, k := range w.business.Keys {
		s.values = append(s.values, must(m.Get(k)))
	}
	lockKey := w.ex.target.key()
	if w.multi() {
		s.lock = w.masterLocks()
		return s
	}
	if !m.Exists(lockKey) {
		s.lock = "-"
		return s
	}
	switch m.Type(lockKey) {
	case "hash":
		keys, _ := m.HKeys(lockKey)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+":"+m.HGet(lockKey, k))
		}
		s.lock = "{" + strings.Join(parts, " ") + "}"
	default:
		s.lock = must(m.Get(lockKey))
	}
	if ttl := m.TTL(lockKey); ttl > 0 {
		s.lock += fmt.Sprintf(" (%dms)", ttl.Milliseconds())
	}
	return s
}

func must(s string, _ error) string { return s }

// atoi is s as a number, 0 for none.
func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// broken is what the business's Judge finds wrong after the step (the
// sale's: an Oversell, two clients wrote inside their sections at once,
// and one sale overwrote the other), or nil.
func (w *world) broken() error {
	return w.business.Judge(w.snapshot().values)
}

// shown is s's values as the diagram shows them.
func (w *world) showValues(s shot) string {
	if w.business.Show != nil {
		return w.business.Show(s.values)
	}
	out := make([]string, len(s.values))
	for i, v := range s.values {
		out[i] = cmp.Or(v, "-")
	}
	return strings.Join(out, "/")
}

// record adds a delivered step to the trace and to c's history.
func (w *world) record(c *client, g *gate, before phase, att int) {
	switch {
	case c.attempt != att:
		c.hist = nil // a new attempt: what came before it no longer matters
	default:
		if c.histAttempt != att {
			c.hist, c.histAttempt = nil, att
		}
		c.hist = append(c.hist, rawAnswered(g.cmds, g.answers))
	}
	if w.ex.quiet {
		return
	}
	text, reply := w.show(c, g.cmds, g.answers)
	switch {
	case g.unsent:
		text = "** context cancelled ** " + text + " (not sent)"
	case g.cancel == cancelAfter:
		text += " ** context cancelled before the reply **"
	}
	if g.wd {
		text = "(watchdog) " + text
	}
	if g.node > 0 {
		text = fmt.Sprintf("m%d: %s", g.node, text)
	}
	was := w.shown
	now := w.snapshot()
	var notes []string
	others := w.otherHolders(c)
	if before == phaseObtain && c.phase != phaseObtain {
		if len(others) > 0 {
			notes = append(notes, "holds the lock while "+strings.Join(others, " and ")+" holds it too")
		} else {
			notes = append(notes, "holds the lock")
		}
	}
	if !w.multi() && was.lock != "-" && now.lock == "-" && len(others) > 0 {
		// The step that breaks check-del and del-setnx: a client frees
		// the lock another one holds.
		notes = append(notes, "deletes "+strings.Join(others, " and ")+"'s lock")
	}
	if note := w.business.Note; note != nil && was.values != nil {
		if n := note(was.values, now.values); n != "" {
			notes = append(notes, n)
		}
	}
	if before == phaseObtain && c.finished { // it gave up: its context cancelled, or a reply lost
		notes = append(notes, "Obtain fails: gives up")
	}
	if before == phaseRelease && c.phase != phaseRelease {
		if c.cancelled && c.cancelIn == phaseRelease && c.cancelSection == c.sections-1 {
			notes = append(notes, "Release returns, cancelled")
		} else {
			notes = append(notes, "released")
		}
	}
	w.step(c.id, text, reply, strings.Join(notes, ", "), now)
	w.trace[len(w.trace)-1].Site = g.callers.site()
}

// otherHolders names the clients other than c that are between their
// Obtain and their Release.
func (w *world) otherHolders(c *client) []string {
	var out []string
	for _, o := range w.clients {
		if o != c && o.holding() {
			out = append(out, o.name)
		}
	}
	return out
}

// step appends a row to the trace.
func (w *world) step(client int, event, reply, note string, s shot) {
	w.shown = s
	if w.ex.quiet {
		return
	}
	w.trace = append(w.trace, Step{
		N: w.stepNo, At: w.time().Sub(w.epoch), Client: client, Event: event, Reply: reply, Note: note,
		Lock: w.display(s.lock, -1), Stock: w.showValues(s),
	})
}

var (
	uuidRe  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	stampRe = regexp.MustCompile(`\b1[0-9]{12}\b`) // Unix ms near the epoch
)

// show renders cmds and their replies for the diagram: short key names,
// each token named after the client that made it (A1: A's first), each
// timestamp as @ms of virtual time.
func (w *world) show(c *client, cmds []redis.Cmder, answers []string) (string, string) {
	var texts, replies []string
	if answers == nil {
		answers = answersOf(cmds)
	}
	for i, cmd := range cmds {
		args := cmd.Args()
		words := make([]string, 0, len(args))
		name := strings.ToUpper(cmd.Name())
		rest := args[1:]
		if (name == "EVAL" || name == "EVALSHA") && len(args) >= 3 {
			// An EVAL names its script by its source: it may be about
			// to load it, and is then not among those loaded yet.
			if name == "EVAL" {
				name = "EVAL " + w.ex.scripts.scriptName(argString(args[1]))
			} else {
				name = "EVAL " + w.ex.scripts.name(argString(args[1]))
			}
			rest = args[3:]
		}
		words = append(words, name)
		for _, a := range rest {
			words = append(words, argString(a))
		}
		texts = append(texts, w.display(strings.Join(words, " "), c.id))
		replies = append(replies, w.display(answers[i], c.id))
	}
	return strings.Join(texts, "; "), strings.Join(replies, "; ")
}

// display shortens keys, names tokens (a token first seen in a command
// of client id is that client's) and shows timestamps as virtual time.
func (w *world) display(s string, id int) string {
	s = w.ex.keys.Replace(w.untoken(s))
	s = uuidRe.ReplaceAllStringFunc(s, func(u string) string {
		if n, ok := w.names[u]; ok {
			return n
		}
		if id < 0 {
			return "?"
		}
		c := w.clients[id]
		c.tokens++
		n := fmt.Sprintf("%s%d", c.name, c.tokens)
		w.names[u] = n
		return n
	})
	return stampRe.ReplaceAllStringFunc(s, func(v string) string {
		ms, _ := strconv.ParseInt(v, 10, 64)
		return fmt.Sprintf("@%d", ms-w.epoch.UnixMilli())
	})
}

func replyString(cmd redis.Cmder) string {
	err := cmd.Err()
	switch {
	case errors.Is(err, redis.Nil):
		return "nil"
	case err != nil:
		return "ERR " + err.Error()
	}
	switch c := cmd.(type) {
	case *redis.Cmd:
		return fmt.Sprint(c.Val())
	case *redis.BoolCmd:
		if c.Val() {
			return "1"
		}
		return "0"
	case *redis.StatusCmd:
		return c.Val()
	case *redis.IntCmd:
		return strconv.FormatInt(c.Val(), 10)
	case *redis.StringCmd:
		return c.Val()
	}
	s := cmd.String()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// answersOf is each of cmds' replies.
func answersOf(cmds []redis.Cmder) []string {
	out := make([]string, len(cmds))
	for i, cmd := range cmds {
		out[i] = replyString(cmd)
	}
	return out
}

func rawCmds(cmds []redis.Cmder) string { return rawAnswered(cmds, nil) }

// rawAnswered is cmds with their answers (nil: read from cmds).
func rawAnswered(cmds []redis.Cmder, answers []string) string {
	if answers == nil {
		answers = answersOf(cmds)
	}
	var b strings.Builder
	for i, cmd := range cmds {
		for _, a := range cmd.Args() {
			b.WriteString(argString(a))
			b.WriteByte(' ')
		}
		b.WriteString("=> ")
		b.WriteString(answers[i])
		b.WriteString("; ")
	}
	return b.String()
}

func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(a)
}

// key is the state a schedule has reached, for pruning: every Redis key
// with its value and TTL, and each client's position (its phase, its
// held-back commands, what it has sent and read since its attempt
// began), its faults, and the budget left. Clients are interchangeable
// (they run the same program), so the key is the least over every order
// of the clients; tokens are renamed by first appearance and timestamps
// made relative to now, so two runs that differ only there meet.
func (w *world) key() uint64 {
	m := w.ex.kv
	var rb strings.Builder
	for _, k := range m.Keys() {
		rb.WriteString(k)
		switch m.Type(k) {
		case "hash":
			fields, _ := m.HKeys(k)
			for _, f := range fields {
				rb.WriteString(" " + f + "=" + m.HGet(k, f))
			}
		case "list":
			l, _ := m.List(k)
			rb.WriteString(" [" + strings.Join(l, ",") + "]")
		default:
			rb.WriteString(" " + must(m.Get(k)))
		}
		fmt.Fprintf(&rb, " ttl=%d\n", m.TTL(k).Milliseconds())
	}
	fmt.Fprintf(&rb, "budget %d %d\n", w.used.faults, w.used.ticks)
	parts := make([]string, len(w.clients))
	for i, c := range w.clients {
		parts[i] = c.key()
	}
	best := ""
	orders := perms(len(parts))
	if w.ex.target.Line {
		// A and B are one process, the watchdog A's: not interchangeable.
		orders = [][]int{make([]int, len(parts))}
		for i := range parts {
			orders[0][i] = i
		}
	}
	for _, p := range orders {
		var b strings.Builder
		for _, i := range p {
			b.WriteString(parts[i])
		}
		b.WriteString(rb.String())
		names := map[string]int{}
		s := w.canonWith(w.untoken(b.String()), names, true)
		if w.multi() {
			s += w.mastersKey(p, names)
		}
		if best == "" || s < best {
			best = s
		}
	}
	h := fnv.New64a()
	h.Write([]byte(best))
	return h.Sum64()
}

func (c *client) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s s%d crash=%v fin=%v skew=%d\n", c.phase, c.sections, c.crashed, c.finished, c.skew)
	if c.cancelled {
		b.WriteString("cancelled\n")
	}
	for _, g := range []*gate{c.gate, c.renewal()} {
		if g != nil && g.wake != nil {
			b.WriteString("> sleep\n")
		} else if g != nil && g.cmds == nil {
			b.WriteString("> start\n")
		} else if g != nil {
			b.WriteString("> " + rawCmds(g.cmds) + "\n")
		}
	}
	if c.asleep() {
		fmt.Fprintf(&b, "> asleep %d\n", c.w.time().Sub(c.sleptAt).Milliseconds())
	}
	hist := c.hist
	if c.nodes != nil {
		// A Redlock round counts its masters' answers, in whatever order
		// they came: the order is not state.
		hist = append([]string(nil), hist...)
		sort.Strings(hist)
	}
	for _, h := range hist {
		b.WriteString("| " + h + "\n")
	}
	if c.nodes != nil && c.phase == phaseObtain && c.gate == nil {
		fmt.Fprintf(&b, "attempt since %d\n", c.w.time().Sub(c.started).Milliseconds())
	}
	for _, t := range c.w.tickers {
		if t.c == c && t.live() {
			fmt.Fprintf(&b, "tick in %d\n", t.due.Sub(c.w.time()).Milliseconds())
			if c.w.ex.target.Line { // a cohort passes for half a lease from here
				fmt.Fprintf(&b, "held %d\n", c.w.time().Sub(t.born).Milliseconds())
			}
		}
	}
	return b.String()
}

// canonWith renames tokens by first appearance (in names, which it
// grows; or, unless grow, each one not in names as u?) and makes
// timestamps relative to now, in one pass (it runs for every order of
// the clients of every state reached).
func (w *world) canonWith(s string, names map[string]int, grow bool) string {
	now := w.time().UnixMilli()
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if i+36 <= len(s) && isUUID(s[i:i+36]) {
			u := s[i : i+36]
			n, ok := names[u]
			if !ok && grow {
				n, ok = len(names), true
				names[u] = n
			}
			b = append(b, 'u')
			if ok {
				b = strconv.AppendInt(b, int64(n), 10)
			} else {
				b = append(b, '?')
			}
			i += 36
			continue
		}
		if s[i] == '1' && (i == 0 || !isDigit(s[i-1])) && i+13 <= len(s) && allDigits(s[i:i+13]) && (i+13 == len(s) || !isDigit(s[i+13])) {
			ms, _ := strconv.ParseInt(s[i:i+13], 10, 64)
			b = append(b, 'T')
			b = strconv.AppendInt(b, ms-now, 10)
			i += 13
			continue
		}
		b = append(b, s[i])
		i++
	}
	return string(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func allDigits(s string) bool {
	for i := range len(s) {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isUUID(s string) bool {
	for i := range 36 {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// perms lists every order of n items.
func perms(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range perms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}
