package explore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// epoch is virtual time 0: every world starts there, so that the expiry
// timestamps the rungs write are the same in every run of a schedule.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// initialStock is the stock every world starts with: more than the
// clients can sell, so a sale is never refused for want of stock.
const initialStock = 10

// lockKey is the lock the clients take: the app's /sale lock.
const lockKey = inventory.StockLock

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
	rdb    redis.Cmdable
	locker lock.Locker
	store  *inventory.Store

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
	hist         []string // this attempt's (and section's) commands and replies
	histAttempt  int      // the attempt hist is of
	tokens       int      // tokens this client has made, for their names
	sleptAt      time.Time // in a bubble: when it fell asleep (zero: awake)
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
	if c.w.ex.target.strict {
		defer c.caught() // a checked lock's panic fails the check, not the process
	}
	ctx := context.WithValue(context.WithValue(c.w.ctx, mainKey{}, c.w), clientKey{}, c)
	if c.w.multi() {
		ctx = lock.WithRoundWatch(ctx, roundWatch{c})
	}
	once := time.Duration(0)
	if c.w.ex.target.Line {
		once = waitInLine // B waits in A's line; C in fair's queue
	}
	business := c.w.ex.target.business()
	for range c.w.ex.cfg.Sections {
		var held lock.Lock
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
			l, err := c.locker.Obtain(ctx, lockKey, lock.Call{Try: &once, Wait: c.w.ex.target.Wait})
			if err == nil {
				held = l
				break
			}
			if !errors.Is(err, lock.ErrNotObtained) {
				c.obtainFailed(err)
				return // the world ended under it
			}
		}
		c.phase = phaseSection
		_ = business(ctx, c.rdb, c.store, held) // a refused sale (a stale token) is no sale
		c.phase = phaseRelease
		_ = held.Release(ctx) // not held any more: the lease lapsed; it says so, and moves on
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

// Sale is the app's business under a lock (handlers.critical): the
// fenced sale with the lock's fencing token when it has one, else the
// articles' GET, check, SET.
func Sale(ctx context.Context, _ redis.Cmdable, s *inventory.Store, l lock.Lock) error {
	var g inventory.Guard
	if t, ok := l.(lock.Tokened); ok {
		g.Token = t.Token()
	}
	_, err := s.Sell(ctx, g)
	return err
}

// scripts knows which Lua scripts Redis has loaded (so that a digest it
// does not know goes through as the NOSCRIPT it is, not as a step) and
// names each by its file.
type scripts struct {
	mu     sync.Mutex
	loaded map[string]string // sha1 -> name
}

// scriptNames names a script by the first words of its opening comment.
var scriptNames = []struct{ prefix, name string }{
	{"-- Release a lock only if we still own it", "lua-release"},
	{"-- Take a reentrant lock", "reentrant-acquire"},
	{"-- Leave a reentrant lock", "reentrant-release"},
	{"-- Renew a reentrant lock", "reentrant-renew"},
	{"-- Take a lease and hand out the next fencing token", "fenced-acquire"},
	{"-- Take a fair lock", "fair-acquire"},
	{"-- Release a fair lock", "fair-release"},
	{"-- Renew a lease, only while", "fair-renew"},
	{"-- Read a value under a fencing token", "fenced-read"},
	{"-- Write a value under a fencing token", "fenced-write"},
	{"-- Sell one item in one atomic step", "sell-atomic"},
	// The libraries' (Libraries), by their own source.
	{"\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3])", "redislock-obtain"},
	{`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`, "redislock-refresh"},
	{`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`, "redislock-release"},
	{"\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\"", "redsync-delete"},
}

func scriptName(src string) string {
	for _, n := range scriptNames {
		if strings.HasPrefix(src, n.prefix) {
			return n.name
		}
	}
	sum := sha1.Sum([]byte(src))
	return "script-" + hex.EncodeToString(sum[:4])
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
		s.loaded[hex.EncodeToString(sum[:])] = scriptName(src)
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
