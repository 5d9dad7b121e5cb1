package race

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/suite"
)

// Player serves POST /play: "break it yourself", the explorer's world
// played one move at a time by a learner. A request carries the whole
// game (the rung, the clients, every move so far) and the answer is the
// state those moves reach, rebuilt by replaying them: nothing is kept
// per visitor, the same moves give the same state, and a restarted stack
// loses no game. A few games at a time (MaxGames); more is a 429.
type Player struct {
	// Replayer replays a broken game on a real redis-server; nil: started
	// on the first replay asked for (StartReplayer), stopped by Close.
	Replayer *explore.Replayer

	slots    chan struct{} // games in flight
	mu       sync.Mutex    // the searches, and the replayer's start
	replayMu sync.Mutex    // one replay at a time
	stopRepl func()
	searches map[string]*hintSearch // name/clients -> the search for its shortest schedule
	bg       sync.WaitGroup         // the searches under way
	closed   bool
}

// MaxGames is how many moves are answered at once; the explorer runs one
// world at a time, so the others wait their turn.
const MaxGames = 4

// maxPlayBody bounds a request's body: 60 moves of a few bytes each.
const maxPlayBody = 4 << 10

// turnWait is the longest a move waits for the explorer (busy with a
// search for the page's why?, say) before it is a 503.
const turnWait = 2 * time.Second

// NewPlayer returns a Player.
func NewPlayer() *Player { return &Player{slots: make(chan struct{}, MaxGames)} }

// PlayRequest is the body of POST /play.
type PlayRequest struct {
	Lock    string   `json:"lock"`
	Clients int      `json:"clients"` // 2 or 3; 0: 3 (2 on masters)
	Moves   []string `json:"moves"`
	// LeaseMS is the lease the clients take, a scenario's (the race's
	// beside the game: GET /race's lease_ms); 0: the explorer's own.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// Hint asks for the next move of the explorer's shortest schedule
	// (found by a search the first time: up to ExploreBudget).
	Hint bool `json:"hint,omitempty"`
	// Replay asks, of a broken game, whether the same moves break the
	// lock on a real redis-server too.
	Replay bool `json:"replay,omitempty"`
}

// PlayResult is the answer: the game's state, its diagram, and what was
// asked beside.
type PlayResult struct {
	explore.Game
	Trace   []Row    `json:"trace"`
	Columns []string `json:"columns"`
	// Lease says the lock's lease in words, true of the rung: "no lease"
	// for setnx (whose lease_ms is then 0).
	Lease string `json:"lease"`
	// Shortest is the length of the explorer's shortest breaking
	// schedule, once known (0: not yet searched, or none found).
	Shortest int `json:"shortest,omitempty"`
	// Hint is the next move of that schedule, when asked and the game
	// is on it (a move as Next names it); HintLabel is its button's words
	// (Next's label), HintWhy one sentence on why, HintText the two as the
	// page says them. HintNote says why there is none; HintWaitMS, when
	// the explorer is still searching, how long it may take at most: ask
	// again then.
	Hint       string `json:"hint,omitempty"`
	HintLabel  string `json:"hint_label,omitempty"`
	HintWhy    string `json:"hint_why,omitempty"`
	HintText   string `json:"hint_text,omitempty"`
	HintNote   string `json:"hint_note,omitempty"`
	HintWaitMS int64  `json:"hint_wait_ms,omitempty"`
	// Replay is "reproduced" or "not-reproduced", when asked.
	Replay string `json:"replay,omitempty"`
}

func (p *Player) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		writeJSON(w, http.StatusOK, p.levels())
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		fail(w, http.StatusMethodNotAllowed, "", `a move is POST /play with {"lock":NAME,"moves":[...]}`)
		return
	}
	if status, reason, msg := (origin.Hosts{}).Check(r); status != 0 {
		fail(w, status, reason, msg)
		return
	}
	req, err := parsePlay(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"reason": "bad_request", "error": err.Error()})
		return
	}
	t, err := lookup(req.Lock)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"reason": "bad_request", "error": fmt.Sprintf("lock %q cannot be played", truncate(req.Lock, 32)), "locks": lockNames()})
		return
	}
	if req.Clients == 0 {
		req.Clients = 3
		if t.MaxClients > 0 {
			req.Clients = min(req.Clients, t.MaxClients)
		}
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusTooManyRequests, "too_many_games", fmt.Sprintf("%d games are being answered: try again in a second", MaxGames))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), turnWait+p.searching())
	g, err := explore.PlayLease(ctx, t, req.Clients, req.lease(), req.Moves)
	cancel()
	var me *explore.MoveError
	switch {
	case errors.As(err, &me):
		writeJSON(w, http.StatusBadRequest, map[string]any{"reason": "bad_request", "error": me.Error(), "move": me.Index + 1})
		return
	case errors.Is(err, explore.ErrBusy):
		w.Header().Set("Retry-After", "5")
		fail(w, http.StatusServiceUnavailable, "explorer_busy", "the explorer is busy with another search (a why?): try again in a few seconds")
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]any{"reason": "bad_request", "error": err.Error()})
		return
	}
	res := PlayResult{Game: g, Trace: rows(g.Trace), Columns: columns(req.Clients, t.Masters)}
	p.truth(t, &res)
	if len(req.Moves) == 0 && !safeLevel(t.Name) {
		// A level opened: its shortest schedule is searched ahead, while
		// the learner reads it, so that a hint has it at once.
		p.searchFor(t, req.Clients, req.lease(), true)
	}
	p.hint(r.Context(), t, req, &res)
	if req.Replay && g.Verdict != "" {
		res.Replay, err = p.replay(r.Context(), t, req, g.Verdict)
		if err != nil {
			fail(w, http.StatusServiceUnavailable, "server_missing", err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, res)
}

func parsePlay(r *http.Request) (PlayRequest, error) {
	var req PlayRequest
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return req, errors.New("the body is JSON: Content-Type: application/json")
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxPlayBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("malformed body: %v", err)
	}
	if dec.More() {
		return req, errors.New("malformed body: one JSON object")
	}
	if req.Lock == "" {
		return req, fmt.Errorf("lock is required (playable: %s)", strings.Join(lockNames(), ", "))
	}
	if req.Clients != 0 && (req.Clients < 2 || req.Clients > 3) {
		return req, fmt.Errorf("clients %d is out of range [2, 3]", req.Clients)
	}
	if len(req.Moves) > explore.MaxMoves {
		return req, fmt.Errorf("%d moves: a game has at most %d", len(req.Moves), explore.MaxMoves)
	}
	if req.LeaseMS != 0 && !slices.Contains(scenarioLeases(), req.LeaseMS) {
		return req, fmt.Errorf("lease_ms %d is not a scenario's lease (one of %v)", req.LeaseMS, scenarioLeases())
	}
	return req, nil
}

func (req PlayRequest) lease() time.Duration { return time.Duration(req.LeaseMS) * time.Millisecond }

// scenarioLeases are the leases the scenarios grant (their -lock-ttl),
// in ms: the only ones a game takes, so that the hint searches, one per
// lease, stay few.
func scenarioLeases() []int64 {
	var out []int64
	for _, sc := range suite.Scenarios() {
		if ms := ttlOf(sc).Milliseconds(); ms > 0 && !slices.Contains(out, ms) {
			out = append(out, ms)
		}
	}
	slices.Sort(out)
	return out
}

// replay plays the game's moves on a real redis-server, with real clients
// on real time, and says whether the lock broke there too.
func (p *Player) replay(ctx context.Context, t explore.Target, req PlayRequest, verdict string) (string, error) {
	p.replayMu.Lock()
	defer p.replayMu.Unlock()
	if p.Replayer == nil {
		rp, stop, err := explore.StartReplayer(ctx, io.Discard, true)
		if err != nil {
			return "", fmt.Errorf("replay needs redis-server (Debian package redis-server): %v", err)
		}
		p.Replayer, p.stopRepl = rp, stop
	}
	var s []explore.Choice
	for _, m := range req.Moves {
		ch, err := explore.ParseMove(m, req.Clients, t.Masters)
		if err != nil {
			return "", err
		}
		s = append(s, ch)
	}
	return p.Replayer.ReplayGame(ctx, t, req.Clients, req.lease(), s, verdict), nil
}

// Close stops the searches under way, waiting for them, and the
// replays' redis-server, if one was started.
func (p *Player) Close() {
	p.mu.Lock()
	p.closed = true
	for _, s := range p.searches {
		s.cancel()
	}
	p.mu.Unlock()
	p.bg.Wait()
	p.replayMu.Lock()
	defer p.replayMu.Unlock()
	if p.stopRepl != nil {
		p.stopRepl()
		p.stopRepl, p.Replayer = nil, nil
	}
}

// Level is one rung of the path through the ladder: what to break.
type Level struct {
	Lock   string `json:"lock"`
	Brief  string `json:"brief"` // what the sources say of the rung
	Goal   string `json:"goal"`
	Safe   bool   `json:"safe,omitempty"` // a rung that should hold: try to break it
	Faults string `json:"faults"`
	// Can says the faults in words: what may happen in the level.
	Can     string `json:"can"`
	Clients int    `json:"clients"`
	Masters int    `json:"masters,omitempty"`
}

// path is the ladder's order for the levels, each with its brief: what
// the source articles ([000] to [004], README's References) say of it.
var path = []struct {
	lock, brief string
	safe        bool
}{
	{"setnx", "SETNX takes the lock if nobody has it; DEL gives it back (\"Redis SETNX for a distributed lock, explained\" [004]). Nothing gives it back if the holder dies first.", false},
	{"setnx-expire", "SETNX, then EXPIRE so that a dead holder's lock lapses (BugMaker-shen, \"Redis distributed lock\" [000]): two commands, and a holder can die between them.", false},
	{"setnx-px", "SET NX PX: the lock and its lease in one command (\"Redis distributed lock\" [000]). The holder's work can outlive the lease, and its DEL then frees whoever holds the lock next.", false},
	{"check-del", "GET the lock, compare it with my token, then DEL (\"Redis distributed lock\" [000]; \"On the correct implementation of Redis distributed locks\" [002]): two commands, and the lease can lapse between them.", false},
	{"lua", "The compare-and-delete in one Lua script, atomic in Redis (\"Redis operations made atomic with Lua\" [003]): the release is right; the lease still is not.", false},
	{"del-setnx", "A lock that holds an expiry time: a waiter that finds it past DELs it and SETNXes its own (\"Redis SETNX for a distributed lock, explained\" [004]). Two waiters can both find it past.", false},
	{"getset", "GETSET swaps in a new expiry and reads the old one, so only one waiter wins (\"Redis SETNX for a distributed lock, explained\" [004]); it trusts every client's clock.", false},
	{"reentrant", "A hash with an owner and a count, renewed by a watchdog while held (\"Handwritten Redis distributed lock (2)\" [001]): a process that freezes freezes its watchdog too.", false},
	{"redlock", "The lock on a majority of independent masters (Redlock, as \"On the correct implementation of Redis distributed locks\" [002] gives it; Kleppmann's \"How to do distributed locking\" and antirez's \"Is Redlock safe?\"): a pause past the lease still lets a second holder in.", false},
	{"fenced", "Each grant hands out a larger fencing token, and the write refuses a token older than one it has seen (Kleppmann, \"How to do distributed locking\"). Try to sell an item twice.", true},
	{"fair", "A FIFO queue with a lease and direct handoff: clients take the lock in the order they asked. Try to sell an item twice.", true},
	{"cohort", "Requests of one process pass the lock in memory, fenced by the shared token. Try to sell an item twice.", true},
	{"atomic", "No lock: the sale is one Lua script, atomic in Redis. Try to sell an item twice.", true},
	// The libraries, their own code unchanged, as the explorer runs them
	// (explore.Libraries): their timers run on the wall clock, where a
	// move takes milliseconds, so only Redis's lease lapses with the
	// game's time.
	{"redsync", "go-redsync's Mutex on one Redis, its code unchanged: SET NX PX with a random value, released by a Lua compare-and-delete, as lua. Nothing renews the lease.", false},
	{"redislock", "bsm/redislock on one Redis, its code unchanged: SET NX PX with a random token, one attempt, released by a Lua compare-and-delete. Nothing renews the lease.", false},
	{"redislock-refresh", "bsm/redislock with a loop that refreshes the lease while its holder works, as the library's README shows: a holder that freezes freezes its refresh too.", false},
	{"redsync-redlock", "go-redsync's Mutex over three masters: Redlock as the library writes it, a majority of masters for the lock. A pause past the lease still lets a second holder in.", false},
}

func (p *Player) levels() map[string]any {
	var out []Level
	for _, l := range path {
		t, err := lookup(l.lock)
		if err != nil {
			continue
		}
		c := 3
		if t.MaxClients > 0 {
			c = min(c, t.MaxClients)
		}
		out = append(out, Level{Lock: t.Name, Brief: l.brief, Goal: explore.Goal(t), Safe: l.safe, Faults: t.Faults.String(), Can: explore.FaultWords(t.Faults), Clients: c, Masters: t.Masters})
	}
	return map[string]any{"levels": out, "max_moves": explore.MaxMoves}
}

func rows(trace []explore.Step) []Row {
	out := []Row{}
	for _, s := range trace {
		row := Row{N: s.N, TMS: s.At.Milliseconds(), Command: s.Event, Reply: s.Reply, Note: s.Note, Lock: s.Lock, Stock: s.Stock, Site: s.Site}
		if s.Client >= 0 {
			row.Client = string(rune('A' + s.Client))
		}
		out = append(out, row)
	}
	return out
}

func columns(clients, masters int) []string {
	var out []string
	for i := range clients {
		out = append(out, string(rune('A'+i)))
	}
	if masters > 0 {
		return append(out, fmt.Sprintf("masters m1-m%d", masters))
	}
	return append(out, "Redis")
}
