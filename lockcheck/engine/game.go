package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A game is the search turned over to a learner: the same world, the
// rung's own code against the gated Redis, but each step is the
// learner's move instead of the search's choice. Nothing is kept between
// two moves: every answer replays the moves so far from the start (a
// world is rebuilt for every schedule anyway), so the same moves give the
// same state every time, and a game survives a restart of whatever
// serves it.

// MaxMoves bounds a game's moves.
const MaxMoves = 60

// gameConfig is a game's world: the search's lease, with room for more
// faults, more time passing and more sections than the search needs (a
// learner tries things the shortest schedule does not, and a client that
// sold may come back for more).
//
// A library's own wall-clock deadlines (redsync's, 5% of the lease a
// call) are held off at the gate in a game as in a search
// (Target.WallDeadlines, WaitsAll): a move that holds a command for as
// long as the machine takes cannot end one.
func gameConfig(clients int, lease time.Duration) Config {
	return Config{MaxClients: clients, Sections: 2, MaxFaults: 3, MaxTicks: 12, TTL: lease}
}

// Game is the state a game's moves reached: what the page draws.
type Game struct {
	Lock    string `json:"lock"`
	Masters int    `json:"masters,omitempty"`
	Goal    string `json:"goal"`
	// Moves are the moves played, as the learner sent them.
	Moves   []string     `json:"moves"`
	NowMS   int64        `json:"now_ms"` // the virtual clock, since the start
	LeaseMS int64        `json:"lease_ms"`
	Clients []ClientView `json:"clients"`
	Keys    []KeyView    `json:"keys"`
	Stock   int64        `json:"stock"`
	Sold    int64        `json:"sold"`
	Holders []string     `json:"holders"` // the clients between Obtain and Release
	// LockNow says in a sentence who holds the lock now, as Redis's key
	// and the clients tell it: a crashed client's key still set is held
	// by nobody alive, never "nobody holds the lock".
	LockNow string `json:"lock_now"`
	// Next are the moves possible now, in the order the search tries
	// them; none once the game has ended.
	Next []Option `json:"next"`
	// Trace is the diagram of the moves so far: a row per step.
	Trace []Step `json:"trace"`
	// Verdict is OVERSOLD or DEADLOCK once the lock is broken (the
	// explorer's own judge), else "".
	Verdict string `json:"verdict,omitempty"`
	// Explain says what the verdict means, or what stopped the moves so
	// far from breaking the lock.
	Explain string `json:"explain"`
}

// ClientView is one client as the game shows it.
type ClientView struct {
	Name  string `json:"name"`
	Phase string `json:"phase"` // obtain, section, release, done
	// Doing is Phase in a learner's words: "trying to take the lock"...
	Doing string `json:"doing"`
	// Next is what its program is about to do: the command held at its
	// gate, or a wait.
	Next    string `json:"next"`
	Crashed bool   `json:"crashed,omitempty"`
	SkewMS  int64  `json:"skew_ms,omitempty"`
	Holding bool   `json:"holding,omitempty"`
	// Site is the line of the lock's code that sends its next command
	// (Next), null when it has none waiting.
	Site *Site `json:"site"`
}

// KeyView is one Redis key: its short name, its value, its TTL (0: none).
type KeyView struct {
	Server string `json:"server"` // "redis", or a master "m1".."m5"
	Key    string `json:"key"`
	Value  string `json:"value"`
	TTLMS  int64  `json:"ttl_ms"`
}

// Option is a move possible now, with what it does in words.
type Option struct {
	Move  string `json:"move"`
	Label string `json:"label"`
}

// MoveError is a move the game refuses: which, and why.
type MoveError struct {
	Index  int // 0-based
	Move   string
	Reason string
}

func (e *MoveError) Error() string {
	return fmt.Sprintf("move %d (%q): %s", e.Index+1, e.Move, e.Reason)
}

// ErrBusy is the answer while another search or game drives the
// explorer for longer than the caller would wait.
var ErrBusy = errors.New("lockcheck: the explorer is busy with another search")

// Goal states what breaking t means: its flaw's verdict.
func Goal(t Target) string {
	if t.Faults&Crash != 0 && t.Faults&Idle != 0 && !t.Clocks {
		return "leave the live clients waiting for ever for a lock that no live client holds (DEADLOCK)"
	}
	return "sell an item twice: two clients write the stock while both hold the lock (OVERSOLD)"
}

// Play replays moves on a fresh world of t with clients clients, each
// move checked against the moves possible at that point, and says what
// they reached. A move that is not possible is a *MoveError naming it.
// ctx bounds the wait for the explorer (one world at a time per
// process): ErrBusy when it ends first.
func Play(ctx context.Context, t Target, clients int, moves []string) (Game, error) {
	return PlayLease(ctx, t, clients, 0, moves)
}

// PlayLease is Play with the clients taking a lease of lease (0: the
// default, Config.TTL's): a game told in the figures of a race.
func PlayLease(ctx context.Context, t Target, clients int, lease time.Duration, moves []string) (Game, error) {
	if clients < 2 || clients > 3 {
		return Game{}, fmt.Errorf("lockcheck: a game has 2 or 3 clients, not %d", clients)
	}
	if t.MaxClients > 0 && clients > t.MaxClients {
		return Game{}, fmt.Errorf("lockcheck: %s is played with at most %d clients", t.Name, t.MaxClients)
	}
	if len(moves) > MaxMoves {
		return Game{}, &MoveError{Index: MaxMoves, Move: moves[MaxMoves], Reason: fmt.Sprintf("a game has at most %d moves", MaxMoves)}
	}
	chs := make([]Choice, len(moves))
	for i, m := range moves {
		ch, err := ParseMove(m, clients, t.Masters)
		if err != nil {
			return Game{}, &MoveError{Index: i, Move: m, Reason: err.Error()}
		}
		chs[i] = ch
	}
	ex, err := New(t, gameConfig(clients, lease))
	if err != nil {
		return Game{}, err
	}
	defer ex.Close()
	var g Game
	var perr error
	if err := ex.drivingCtx(ctx, func() { g, perr = ex.play(clients, moves, chs) }); err != nil {
		return Game{}, err
	}
	return g, perr
}

func (ex *Explorer) play(n int, moves []string, chs []Choice) (Game, error) {
	var skews []int
	for len(skews) < len(chs) && chs[len(skews)].Kind == SkewIt {
		skews = append(skews, chs[len(skews)].Client)
	}
	// A clock runs ahead from the start, or not at all: check the skews
	// on a world without them first.
	w := ex.newWorld(n, nil)
	for i, ch := range chs[:len(skews)] {
		if !slices.Contains(w.choices(), ch) || slices.Contains(skews[:i], ch.Client) {
			w.close()
			return Game{}, &MoveError{Index: i, Move: moves[i], Reason: "not possible here: " + ex.notPossible(ch)}
		}
	}
	w.close()
	w = ex.newWorld(n, skews)
	open := true
	defer func() {
		if open {
			w.close()
		}
	}()
	for i := len(skews); i < len(chs); i++ {
		ch := chs[i]
		if !slices.Contains(w.playable(), ch) {
			return Game{}, &MoveError{Index: i, Move: moves[i], Reason: "not possible here: " + ex.notPossible(ch)}
		}
		if !w.apply(ch) {
			return Game{}, &MoveError{Index: i, Move: moves[i], Reason: "the world went another way (a bug: please report the moves)"}
		}
	}
	g := w.view()
	g.Moves = append([]string{}, moves...)
	if g.Verdict == "" && w.deadlockSuspect() {
		stuck := w.stuck()
		w.close() // the probe replays the moves on a world of its own
		open = false
		if _, dead := ex.probe(n, chs); dead {
			g.Verdict, g.Next = stuck, []Option{}
			why := "a client died holding the lock"
			if stuck == Leaked {
				why = "a cancelled Obtain or Release left the lock's key behind, held by no client"
			}
			g.Explain = fmt.Sprintf("%s: %s, and the live ones wait for ever: even with %s passing, three times over, none of them can take it", stuck, why, 2*ex.cfg.TTL)
		}
	}
	return g, nil
}

// playable are the moves possible now: the search's choices, with every
// master a Redlock client may send to or that may restart, not only one
// of each kind (the search prunes the others as leading to the same
// states; a learner may pick any).
func (w *world) playable() []Choice {
	chs := w.choices()
	if !w.multi() {
		return chs
	}
	var out []Choice
	add := func(ch Choice) {
		if !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	for _, ch := range chs {
		switch {
		case ch.Kind == Deliver && ch.Node > 0:
			c := w.clients[ch.Client]
			start := c.gate != nil && c.gate.cmds == nil
			for m := range w.ex.masters {
				if start || c.nodes[m] != nil {
					add(Choice{Kind: Deliver, Client: c.id, Node: m + 1})
				}
			}
		case ch.Kind == RestartIt:
			for m, kv := range w.ex.masters {
				if kv.Exists(w.ex.target.key()) {
					add(Choice{Kind: RestartIt, Client: -1, Node: m + 1})
				}
			}
		default:
			add(ch)
		}
	}
	return out
}

// notPossible says why ch cannot be played (in general terms: the game
// lists what can).
func (ex *Explorer) notPossible(ch Choice) string {
	f := ex.cfg.Faults
	switch ch.Kind {
	case Tick:
		return fmt.Sprintf("time passes only when this level lets it (%s), at most %d times", FaultWords(f), ex.cfg.MaxTicks)
	case CrashIt, PauseIt, SkewIt, RestartIt, LoseIt, CancelIt, CancelAfterIt:
		if f&kindFault[ch.Kind] == 0 || ch.Kind == SkewIt && !ex.target.Clocks {
			return fmt.Sprintf("this level has no %s (it has: %s)", kindWord[ch.Kind], FaultWords(f))
		}
		return fmt.Sprintf("at most %d faults a game; a crash strikes a live client that has started, a pause a holder, a skew is from the start, a restart a master that holds the lock, a cancel a client in its Obtain or Release, once", ex.cfg.MaxFaults)
	}
	return "that client has no command waiting there (it waits, has crashed or is done)"
}

// FaultWords says in words what a level's faults let happen.
func FaultWords(f Faults) string {
	words := []string{
		"a client may crash", "a client that holds the lock may freeze past its lease", "a client's clock may run ahead",
		"time may pass at any moment", "time may pass between a client's tries and while it releases",
		"time may pass while every client waits", "a master may restart and forget its locks",
		"a command's reply may be lost: it ran, its sender sees a timeout",
		"the context of a client's Obtain or Release may be cancelled, before a command is sent or after it ran",
	}
	var out []string
	for i, w := range words {
		if f&(1<<i) != 0 {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return "no faults"
	}
	return strings.Join(out, "; ")
}

var kindFault = map[ChoiceKind]Faults{CrashIt: Crash, PauseIt: Pause, SkewIt: Skew, RestartIt: Restart, LoseIt: Lost, CancelIt: Cancel, CancelAfterIt: Cancel}

var kindWord = map[ChoiceKind]string{
	Deliver: "deliver", DeliverWD: "renew", Tick: "tick", CrashIt: "crash", PauseIt: "pause", SkewIt: "skew", RestartIt: "restart", LoseIt: "lose",
	CancelIt: "cancel", CancelAfterIt: "cancel-after",
}

// ParseMove reads a move: "A" (deliver A's next command), "A@m2" (A's
// command for master 2 of a rung on masters), "renew A" (A's watchdog's
// renewal), "tick" (time passes to the next thing due), "crash A",
// "pause A", "skew A", "lose A" (its next command runs, its reply is lost),
// "cancel A" (the context of its Obtain or Release is cancelled before
// its next command is sent), "cancel-after A" (... after it ran, before
// its reply), "restart m2".
func ParseMove(s string, clients, masters int) (Choice, error) {
	s = strings.TrimSpace(s)
	if len(s) > 16 {
		return Choice{}, errors.New("not a move: too long")
	}
	client := func(name string) (int, error) {
		if len(name) == 1 && name[0] >= 'A' && int(name[0]-'A') < clients {
			return int(name[0] - 'A'), nil
		}
		return 0, fmt.Errorf("no client %q (clients: %s)", name, clientNames(clients))
	}
	master := func(name string) (int, error) {
		n, err := strconv.Atoi(strings.TrimPrefix(name, "m"))
		if masters == 0 || !strings.HasPrefix(name, "m") || err != nil || n < 1 || n > masters {
			if masters == 0 {
				return 0, errors.New("this rung has one Redis, no masters")
			}
			return 0, fmt.Errorf("no master %q (masters: m1 to m%d)", name, masters)
		}
		return n, nil
	}
	if s == "tick" {
		return Choice{Kind: Tick}, nil // as choices() lists it
	}
	if verb, arg, ok := strings.Cut(s, " "); ok {
		if verb == "restart" {
			m, err := master(arg)
			return Choice{Kind: RestartIt, Client: -1, Node: m}, err
		}
		kinds := map[string]ChoiceKind{"renew": DeliverWD, "crash": CrashIt, "pause": PauseIt, "skew": SkewIt, "lose": LoseIt,
			"cancel": CancelIt, "cancel-after": CancelAfterIt}
		k, ok := kinds[verb]
		if !ok {
			return Choice{}, fmt.Errorf("no move %q (moves: A, A@m1, renew A, tick, crash A, pause A, skew A, lose A, cancel A, cancel-after A, restart m1)", verb)
		}
		c, err := client(arg)
		return Choice{Kind: k, Client: c}, err
	}
	name, node, hasNode := strings.Cut(s, "@")
	c, err := client(name)
	if err != nil {
		return Choice{}, err
	}
	ch := Choice{Kind: Deliver, Client: c}
	if hasNode {
		if ch.Node, err = master(node); err != nil {
			return Choice{}, err
		}
	}
	return ch, nil
}

// FormatMove writes ch as ParseMove reads it.
func FormatMove(ch Choice) string {
	name := func() string { return string(rune('A' + ch.Client)) }
	switch ch.Kind {
	case Deliver:
		if ch.Node > 0 {
			return fmt.Sprintf("%s@m%d", name(), ch.Node)
		}
		return name()
	case Tick:
		return "tick"
	case RestartIt:
		return fmt.Sprintf("restart m%d", ch.Node)
	}
	return kindWord[ch.Kind] + " " + name()
}

func clientNames(n int) string {
	var names []string
	for i := range n {
		names = append(names, string(rune('A'+i)))
	}
	return strings.Join(names, ", ")
}

// drivingCtx is driving, waiting for the explorer no longer than ctx.
func (ex *Explorer) drivingCtx(ctx context.Context, f func()) error {
	select {
	case running <- struct{}{}:
	case <-ctx.Done():
		return ErrBusy
	}
	defer func() { <-running }()
	f()
	return nil
}

// ReplayGame replays a game's moves (its schedule) on p's real
// redis-server, as Replay does a search's counterexample, and says
// whether verdict happened there too; lease is the game's (PlayLease).
func (p *Replayer) ReplayGame(ctx context.Context, t Target, clients int, lease time.Duration, s []Choice, verdict string) string {
	cfg := gameConfig(clients, lease).withDefaults(t)
	return p.Replay(ctx, t, Result{Target: t.Name, Verdict: verdict, Schedule: s, Clients: clients, Config: cfg})
}
