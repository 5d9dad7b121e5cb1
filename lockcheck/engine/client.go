package engine

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// epoch is virtual time 0: every world starts there, so that the expiry
// timestamps the rungs write are the same in every run of a schedule.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// InitialStock is the stock every world starts with: more than the
// clients can sell, so a sale is never refused for want of stock.
const InitialStock = 10

type phase int

const (
	phaseObtain  phase = iota // in Obtain, trying
	phaseSection              // holding: the business (GET, SET)
	phaseRelease              // in Release
	phaseDone                 // every section done
)

func (p phase) String() string {
	return [...]string{"obtain", "section", "release", "done"}[p]
}

// client is one process of a schedule: its own Redis connection (one
// hook, so every command it sends is a step), its own Locker made by the
// rung's constructor as the app makes it, and a program: Obtain (one
// attempt at a time; the search decides when it tries again), the sale
// (GET stock, SET stock-1 and INCR sold), Release.
type client struct {
	w      *world
	id     int
	proc   *client // its process: the first client of it (line.go)
	name   string
	rdb    redis.UniversalClient
	locker Locker

	// Set by the program, read by the search while the program waits.
	phase    phase
	attempt  int // Obtain calls so far
	sections int // sections done
	finished bool

	// The search's view.
	gate, wdGate *gate
	nodes        []*gate   // held for each master, for a target on masters
	started      time.Time // when its attempt began (a target on masters)
	round        *round    // its latest round on its masters (rounds.go)
	delivered    int
	crashed      bool
	skew         time.Duration
	hist         []string  // this attempt's (and section's) commands and replies
	histAttempt  int       // the attempt hist is of
	tokens       int       // tokens this client has made, for their names
	sleptAt      time.Time // in a bubble: when it fell asleep (zero: awake)

	// Cancel (cancel.go): the program's cancel of the context of its
	// Obtain or Release under way; the search's mark for the command it
	// delivers next (fate), and whether it has cancelled one.
	opCancel      context.CancelFunc
	fate          cancelWhen
	cancelled     bool
	cancelIn      phase // the phase, and the section, it was cancelled in
	cancelSection int

	// loseNext: the search loses the reply of the command deliver
	// sends next (Lost; at the start of an attempt, its first), and
	// lostAttempt is the Obtain attempt in which it lost one (0: none).
	loseNext    bool
	lostAttempt int
}

// clock is the client's clock: virtual time, plus its skew.
func (c *client) clock() time.Time { return c.w.time().Add(c.skew) }

func (c *client) live() bool { return !c.crashed && !c.finished }

// holding says whether c is between Obtain's return and Release's.
func (c *client) holding() bool {
	return !c.crashed && (c.phase == phaseSection || c.phase == phaseRelease)
}

func (c *client) run() {
	defer func() { c.w.send(event{kind: evDone, c: c}) }()
	if c.w.ex.target.Strict {
		defer c.caught() // a checked lock's panic fails the check, not the process
	}
	ctx := context.WithValue(context.WithValue(c.w.ctx, mainKey{}, c.w), clientKey{}, c)
	t := c.w.ex.target
	if c.w.multi() && t.Watch != nil {
		ctx = t.Watch(ctx, roundWatch{c})
	}
	business, key := t.business(), t.key()
	for range c.w.ex.cfg.Sections {
		var held Held
		for {
			if c.w.closed.Load() {
				return
			}
			// Both before the start's event: a request that parks in its
			// process's line sends none after it (line.go).
			c.phase = phaseObtain
			c.attempt++
			if !c.startGate() {
				return
			}
			octx := c.opContext(ctx)
			l, err := c.locker.Obtain(octx, key)
			if err == nil && l == nil {
				err = errors.New("its Obtain returned neither a lock nor an error")
			}
			if err == nil {
				held = l
				break
			}
			if octx.Err() != nil {
				return // its context cancelled, it gives up, as its request has
			}
			if c.lostAttempt == c.attempt && !errors.Is(err, ErrNotObtained) {
				// A reply of this attempt was lost, and the lock gave up
				// with an error, as a request that timed out does: no
				// fault of the lock's code, and what it left behind is
				// judged (a key no client can take again is LEAKED).
				return
			}
			if !errors.Is(err, ErrNotObtained) {
				c.obtainFailed(err)
				return // the world ended under it
			}
		}
		c.phase = phaseSection
		// A refused sale (a stale token) is no sale; a CheckError is the
		// check's, not the lock's: it fails the search.
		if err := business.Run(ctx, c.rdb, held); err != nil {
			var ce *CheckError
			if errors.As(err, &ce) && !c.w.closed.Load() {
				c.w.ex.fail(ce)
			}
		}
		c.phase = phaseRelease
		_ = held.Release(c.opContext(ctx)) // not held any more: the lease lapsed; it says so, and moves on
		c.sections++
	}
	c.phase = phaseDone
}

// startGate holds the client before an attempt, until the search
// delivers the attempt's first command: the rung reads its clock when
// the attempt starts, so time that passes before must pass before that
// read, not between the read and the command. False: the world ended.
func (c *client) startGate() bool {
	g := &gate{c: c, open: make(chan bool, 1), ctx: context.Background()}
	c.w.send(event{kind: evGate, c: c, g: g})
	return <-g.open
}

// idle says c is done, or waits to start an attempt.
func (c *client) idle() bool {
	return c.finished || c.phase == phaseObtain && (c.gate != nil && c.gate.cmds == nil || c.asleep())
}

// scripts knows which Lua scripts Redis has loaded (so that a digest it
// does not know goes through as the NOSCRIPT it is, not as a step) and
// names each by its file.
type scripts struct {
	mu     sync.Mutex
	loaded map[string]string // sha1 -> name
	names  []ScriptName      // the target's, then the sale's
}

func (s *scripts) scriptName(src string) string {
	for _, n := range s.names {
		if strings.HasPrefix(src, n.Prefix) {
			return n.Name
		}
	}
	sum := sha1.Sum([]byte(src))
	return "script-" + hex.EncodeToString(sum[:4])
}

// says is what the script named name does, in words ("" when its
// ScriptName does not say).
func (s *scripts) says(name string) string {
	for _, n := range s.names {
		if n.Name == name {
			return n.Says
		}
	}
	return ""
}

// unknown says cmd is an EVALSHA of a script Redis has not loaded.
func (s *scripts) unknown(cmd redis.Cmder) bool {
	args := cmd.Args()
	if !strings.EqualFold(cmd.Name(), "evalsha") || len(args) < 2 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.loaded[strings.ToLower(argString(args[1]))]
	return !ok
}

// note records the scripts cmds loaded (EVAL, SCRIPT LOAD).
func (s *scripts) note(cmds []redis.Cmder) {
	for _, cmd := range cmds {
		args := cmd.Args()
		var src string
		switch {
		case strings.EqualFold(cmd.Name(), "eval") && len(args) > 1:
			src = argString(args[1])
		case strings.EqualFold(cmd.Name(), "script") && len(args) > 2 && strings.EqualFold(argString(args[1]), "load"):
			src = argString(args[2])
		default:
			continue
		}
		if cmd.Err() != nil {
			continue
		}
		sum := sha1.Sum([]byte(src))
		s.mu.Lock()
		s.loaded[hex.EncodeToString(sum[:])] = s.scriptName(src)
		s.mu.Unlock()
	}
}

// name is the name of the script with digest sha.
func (s *scripts) name(sha string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.loaded[strings.ToLower(sha)]; ok {
		return n
	}
	return "script-" + sha[:min(8, len(sha))]
}
