package engine

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Explorer searches the schedules of one target.
type Explorer struct {
	target   Target
	cfg      Config
	kv       kv   // the server's contents, read directly (not a step)
	real     bool // a real redis-server: real time (a replay)
	closeKV  func()
	rdbs     []*redis.Client
	hooks    []*gateHook
	scripts  *scripts
	business *Business         // what each client does under the lock (Target's)
	keys     *strings.Replacer // the diagram's short names (Target.Display)

	// A target on masters (Redlock): their contents, each client's
	// connections to them and its Locker, kept for the explorer.
	masters    []masterKV
	masterRdbs []*redis.Client
	nodeHooks  []*gateHook
	lockers    []Locker

	schedules, diverged int
	taken               map[ChoiceKind]int // the choices the search took, by kind
	passed              int                // schedules in which a request was passed the lock in memory (line.go)
	quiet               bool               // no trace: the search; the one found is run again to draw it
	failed              failures

	// bubble: a search in a testing/synctest bubble (bubble.go), on the
	// bubble's clock; mini is its Redis.
	bubble bool
	mini   *miniredis.Miniredis
	// wall is the wall clock, for the budget: in a bubble, time.Now is
	// the search's (nil: time.Now).
	wall func() time.Time
	// asleep is the schedule's Result.Asleep, for a replay on real time.
	asleep []uint8
	steps  *atomic.Int64 // counted for the stall guard (wallClock)

	// current is the world the explorer drives now: the watchdogs'
	// tickers and the waiters' timers are made in it (ticker, after).
	current atomic.Pointer[world]
}

// one explorer at a time per process: the watchdogs' ticker is global.
// A channel, so that a game can wait for its turn no longer than its
// context (drivingCtx).
var running = make(chan struct{}, 1)

// New starts the in-process Redis and the clients' connections to it.
func New(t Target, cfg Config) (*Explorer, error) {
	srv, err := newServer()
	if err != nil {
		return nil, fmt.Errorf("lockcheck: start miniredis: %w", err)
	}
	ex := newExplorer(t, cfg, func(context.Context, string, string) (net.Conn, error) {
		a, b := net.Pipe()
		srv.Server().ServeConn(b)
		return a, nil
	}, "miniredis")
	ex.kv, ex.closeKV = srv, srv.Close
	for m := range t.Masters {
		ex.masters = append(ex.masters, srv.DB(m+1))
	}
	return ex, nil
}

// newReal connects an explorer to the real redis-server at addr, on real
// time: a replay.
func newReal(t Target, cfg Config, addr string) *Explorer {
	ex := newExplorer(t, cfg, nil, addr)
	direct := redis.NewClient(&redis.Options{Network: cfg.network, Addr: addr, Password: cfg.password, Protocol: 2, DisableIdentity: true})
	// The scripts a replay before this one loaded would go through
	// unheld (a digest the explorer does not know passes: NOSCRIPT is no
	// step): the server starts without any, as the explorer's list does.
	direct.ScriptFlush(bg)
	ex.kv, ex.closeKV, ex.real = realKV{direct}, func() { _ = direct.Close() }, true
	for m := range t.Masters {
		db := redis.NewClient(&redis.Options{Network: cfg.network, Addr: addr, Password: cfg.password, DB: m + 1, Protocol: 2, DisableIdentity: true})
		ex.masters = append(ex.masters, realKV{db})
		closeDirect := ex.closeKV
		ex.closeKV = func() { closeDirect(); _ = db.Close() }
	}
	return ex
}

type dialer = func(context.Context, string, string) (net.Conn, error)

// noMaint turns off go-redis's maintenance notifications for the
// explorer's clients: left on, NewClient resolves the address's host
// ("miniredis", a name no resolver knows) and waits up to 2s for the
// answer, which every game move would pay.
func noMaint() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

func newExplorer(t Target, cfg Config, dial dialer, addr string) *Explorer {
	cfg = cfg.withDefaults(t)
	ex := &Explorer{target: t, cfg: cfg, business: t.business(), taken: map[ChoiceKind]int{}, keys: strings.NewReplacer(t.Display...),
		scripts: &scripts{loaded: map[string]string{}, names: append(append([]ScriptName(nil), t.Scripts...), saleScripts...)}}
	for i := range cfg.MaxClients {
		h := &gateHook{ex: ex, id: i}
		rdb := redis.NewClient(&redis.Options{
			Network: cfg.network, Addr: addr, Password: cfg.password, Dialer: dial, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 4,
			MaintNotificationsConfig: noMaint(),
		})
		rdb.AddHook(h)
		ex.rdbs, ex.hooks = append(ex.rdbs, rdb), append(ex.hooks, h)
	}
	if t.Masters > 0 {
		ex.addMasters(addr, dial)
	}
	return ex
}

// Close stops the Redis (an in-process one) and the connections.
func (ex *Explorer) Close() {
	for _, r := range append(ex.rdbs, ex.masterRdbs...) {
		_ = r.Close()
	}
	ex.closeKV()
}

// wallNow is the wall clock's now, whatever time.Now is.
func (ex *Explorer) wallNow() time.Time {
	if ex.wall != nil {
		return ex.wall()
	}
	return time.Now()
}

var debugDiverge = false

// replay builds a world and takes the steps of schedule s.
func (ex *Explorer) replay(n int, s []Choice) (*world, bool) {
	var skews []int
	for len(s) > 0 && s[0].Kind == SkewIt {
		skews = append(skews, s[0].Client)
		s = s[1:]
	}
	w := ex.newWorld(n, skews)
	for _, ch := range s {
		if !w.apply(ch) {
			if debugDiverge {
				fmt.Printf("diverged at %v of %v\n", ch, s)
				var b strings.Builder
				writeDiagram(&b, w.trace, n, "")
				fmt.Println(b.String())
			}
			ex.diverged++
			return w, false
		}
	}
	return w, true
}

// deadlockSuspect says whether no live client holds the lock while one
// has died, or had its Obtain or Release cancelled, and every live
// client that is not done is about to try for it: the state a DEADLOCK
// (a LEAKED key) starts from, if it is one (probe says).
func (w *world) deadlockSuspect() bool {
	dead, waiting := false, false
	for _, c := range w.clients {
		// A client that gave up in its Obtain (its context cancelled, a
		// reply lost) may have left a key behind, as a dead one may.
		dead = dead || c.cancelled || c.finished && c.phase == phaseObtain
		switch {
		case c.crashed:
			dead = true
		case c.finished:
		case !c.idle() || c.renewal() != nil:
			return false
		default:
			waiting = true
		}
	}
	return dead && waiting
}

// probe runs schedule s on and lets the live clients try for the lock,
// each in turn, after time has run far past every lease, three times
// over. None getting it is a DEADLOCK; the trace is s's and the first
// round's.
func (ex *Explorer) probe(n int, s []Choice) ([]Step, bool) {
	w, ok := ex.replay(n, s)
	defer w.close()
	if !ok {
		return nil, false
	}
	var shown []Step
	w.stepNo = 0
	for round := range 3 {
		w.advance(w.time().Add(2*ex.cfg.TTL+time.Millisecond), nil)
		if round == 0 {
			w.step(-1, "", "", fmt.Sprintf("time passes to %dms", w.time().Sub(w.epoch).Milliseconds()), w.snapshot())
		}
		for _, c := range w.clients {
			// One whole attempt: from its start back to the next.
			for i := 0; i < 32 && !c.crashed && c.gate != nil && (i == 0 || !c.idle()); i++ {
				w.deliver(c, false)
				if c.phase != phaseObtain {
					return nil, false // it got the lock
				}
			}
		}
		if round == 0 {
			shown = append([]Step(nil), w.trace...)
		}
	}
	return shown, true
}

// Run searches the target's schedules, with 2 clients and then up to
// MaxClients, breadth first (so the first violation found is a shortest
// one), until a violation, the depth bound, the end of the states or the
// time budget.
func (ex *Explorer) Run(ctx context.Context) Result {
	var r Result
	ex.driving(func() { r = ex.run(ctx) })
	return r
}

func (ex *Explorer) run(ctx context.Context) Result {
	start := ex.wallNow()
	deadline := start.Add(ex.cfg.Budget)
	r := Result{Target: ex.target.Name, Masters: ex.target.Masters, Verdict: None, Columns: strings.Join(ex.business.names(), "/"), Faults: ex.cfg.Faults, Config: ex.cfg, Unexplored: ex.target.Unexplored, InLine: ex.target.Line}
	for n := 2; n <= ex.cfg.MaxClients; n++ {
		r.Clients = n
		// Fewer clients first, and with no more than their share of the
		// time: the search with more still gets its turn.
		share := deadline
		if n < ex.cfg.MaxClients {
			now := ex.wallNow()
			share = now.Add(deadline.Sub(now) / time.Duration(ex.cfg.MaxClients-n+1))
		}
		states := r.States
		ex.search(ctx, n, share, &r)
		r.Covers = append(r.Covers, Cover{Clients: n, Depth: r.Depth, Bound: r.Bound, States: r.States - states})
		if r.Verdict != None || ctx.Err() != nil {
			break
		}
	}
	r.Schedules, r.Elapsed = ex.schedules, ex.wallNow().Sub(start)
	r.Diverged, r.Passed, r.Taken = ex.diverged, ex.passed, ex.taken
	return r
}

// draw runs schedule s again, tracing it this time, for r.
func (ex *Explorer) draw(n int, s []Choice, verdict string, r *Result) {
	ex.quiet = false
	defer func() { ex.quiet = true }()
	r.Verdict, r.Steps, r.Schedule = verdict, len(s), s
	if verdict == Deadlock || verdict == Leaked {
		r.Trace, _ = ex.probe(n, s)
		if verdict == Leaked {
			r.Violation = leakedWhy
		}
		return
	}
	w, _ := ex.replay(n, s)
	r.Trace, r.Asleep = w.trace, w.asleepLog
	r.setBroken(w.broken())
	w.close()
}

func (ex *Explorer) search(ctx context.Context, n int, deadline time.Time, r *Result) {
	ex.quiet = true
	defer func() { ex.quiet = false }()
	seen := map[uint64]bool{}
	w := ex.newWorld(n, nil)
	seen[w.key()] = true
	w.close()
	level := [][]Choice{nil}
	r.Depth, r.Bound = 0, "depth"
	for depth := 1; depth <= ex.cfg.Depth; depth++ {
		var next [][]Choice
		for _, prefix := range level {
			if ex.failure() != nil {
				r.Bound = "failed" // the check's error says why
				return
			}
			if ex.wallNow().After(deadline) || ctx.Err() != nil {
				r.Bound = "time"
				return
			}
			w, ok := ex.replay(n, prefix)
			chs := w.choices()
			for i, ch := range chs {
				s := append(append([]Choice(nil), prefix...), ch)
				switch {
				case ch.Kind == SkewIt: // a skew from the start: a world of its own
					if i == 0 {
						w.close()
					}
					w, ok = ex.replay(n, s)
				case i > 0:
					w, ok = ex.replay(n, prefix)
					ok = ok && w.apply(ch)
				default:
					ok = ok && w.apply(ch)
				}
				if !ok {
					w.close()
					continue
				}
				ex.schedules++
				ex.taken[ch.Kind]++
				if ex.steps != nil {
					ex.steps.Add(1)
				}
				if w.passes > 0 {
					ex.passed++
				}
				if err := w.broken(); err != nil {
					w.close()
					ex.draw(n, s, verdictOf(err), r)
					return
				}
				k := w.key()
				suspect := !seen[k] && w.deadlockSuspect()
				stuck := w.stuck()
				w.close()
				if seen[k] {
					continue
				}
				seen[k] = true
				r.States++
				if suspect {
					if _, dead := ex.probe(n, s); dead {
						ex.draw(n, s, stuck, r)
						return
					}
				}
				next = append(next, s)
			}
			if len(chs) == 0 {
				w.close()
			}
		}
		r.Depth = depth
		if len(next) == 0 {
			r.Bound = "exhausted"
			return
		}
		level = next
	}
}

// Reproduce runs schedule s with n clients once, tracing it, and says
// what it came to: the business broken at its end (OVERSOLD, VIOLATED),
// a DEADLOCK from it (the probe), or None. A schedule that cannot be
// taken here (a step not possible: the lock is not the one it was found
// on) is an error.
func (ex *Explorer) Reproduce(n int, s []Choice) (r Result, err error) {
	r = Result{Target: ex.target.Name, Masters: ex.target.Masters, Verdict: None, Faults: ex.cfg.Faults, Config: ex.cfg, Clients: n, Schedule: s, Steps: len(s)}
	ex.driving(func() {
		ex.quiet = false
		w, ok := ex.replay(n, s)
		if !ok {
			w.close()
			err = fmt.Errorf("lockcheck: %s: the schedule cannot be taken on this lock (a step it names is not possible where it comes)", ex.target.Name)
			return
		}
		r.Trace, r.Asleep = w.trace, w.asleepLog
		if b := w.broken(); b != nil {
			r.Verdict = verdictOf(b)
			r.setBroken(b)
			w.close()
			return
		}
		suspect, stuck := w.deadlockSuspect(), w.stuck()
		w.close()
		if suspect {
			if trace, dead := ex.probe(n, s); dead {
				r.Verdict, r.Trace = stuck, trace
				if stuck == Leaked {
					r.Violation = leakedWhy
				}
			}
		}
	})
	return r, err
}
