package race

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/number"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/lockcheck/engine"
)

// ExploreBudget bounds one exploration the page asks for: enough for
// every flawed rung's shortest counterexample, a safe rung's search cut
// short (its coverage says where).
const ExploreBudget = 20 * time.Second

// Explorer serves POST /explore?lock=NAME: the explorer (package explore)
// searching the rung's own code for its shortest counterexample, answered
// as JSON the page draws as a sequence diagram, with its replay token;
// POST /explore?lock=NAME&token=T replays the schedule of a token (the
// page's, or one a failing lockcheck printed for the same code) instead
// of searching; GET /explore names the
// rungs it can explore. It runs in the harness process, beside the races,
// never in an instance under test, and one exploration at a time: each
// takes a core for up to its budget.
type Explorer struct {
	Budget time.Duration // 0: ExploreBudget
	// PerMinute bounds the searches started in any minute (0:
	// ExplorePerMinute): beyond it, a 429 with Retry-After. Each search
	// keeps a core busy for up to its budget, in the process that sends
	// the races' load.
	PerMinute int

	busy atomic.Bool
	mu   sync.Mutex
	// starts are when the searches of the last minute started, oldest
	// first (at most PerMinute).
	starts []time.Time
	// run searches; nil: the explorer itself (tests put a stand-in).
	run func(context.Context, explore.Target, explore.Config) explore.Result
}

// ExplorePerMinute is how many searches a stack starts in a minute at
// most, by default.
const ExplorePerMinute = 4

// NewExplorer returns an Explorer with the default budget.
func NewExplorer() *Explorer { return &Explorer{Budget: ExploreBudget} }

// ExploreResult is the answer to POST /explore.
type ExploreResult struct {
	Lock    string `json:"lock"`
	Verdict string `json:"verdict"` // OVERSOLD, DEADLOCK or none
	// Steps is the counterexample's length (a DEADLOCK's probe, the rows
	// numbered 0, not counted).
	Steps     int      `json:"steps"`
	Clients   int      `json:"clients"`
	Masters   int      `json:"masters,omitempty"` // a rung on masters (Redlock): how many
	Faults    string   `json:"faults"`
	Schedules int      `json:"schedules"`
	States    int      `json:"states"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Oversold  int64    `json:"oversold,omitempty"`
	LeaseMS   int64    `json:"lease_ms"` // the lease the clients took
	Columns   []string `json:"columns"`  // a client's each, then "Redis" (or "masters")
	Rows      []Row    `json:"rows"`
	// Covered says what a search that found nothing covered.
	Covered string `json:"covered,omitempty"`
	// Explain says what the verdict means.
	Explain string `json:"explain"`
	Summary string `json:"summary"` // the bench explore line
	// Token is the counterexample's replay token (lockcheck's): POST
	// /explore?lock=NAME&token=T draws it again, anywhere.
	Token string `json:"token,omitempty"`
}

// Row is one row of the diagram: a step of the schedule.
type Row struct {
	N       int    `json:"n"`              // the step; 0: a DEADLOCK's probe
	TMS     int64  `json:"t_ms"`           // virtual time since the start
	Client  string `json:"client"`         // "A", "B"...; "": none (time passes)
	Command string `json:"command"`        // the command sent, or the fault
	Reply   string `json:"reply"`          // Redis's answer
	Note    string `json:"note,omitempty"` // what the step did
	Lock    string `json:"lock"`           // the lock key after the step
	Stock   string `json:"stock"`          // stock/sold after the step
	// Site is the line of the lock's code that sent the command (file
	// from the module's root, line, function); absent for a fault or
	// time passing.
	Site *explore.Site `json:"site,omitempty"`
}

// Locks are the names of the rungs the explorer can explore: the page's
// (explore.Page: the lab's rungs, Redlock on PageMasters masters) and the
// libraries' own code (explore.Libraries: redsync, redislock...), whose
// race results the page offers "why?" beside too.
func (e *Explorer) Locks() []string { return lockNames() }

// lockNames are Locks: the rungs the explorer explores, and the game
// plays.
func lockNames() []string {
	var names []string
	for _, t := range explore.Page() {
		names = append(names, t.Name)
	}
	for _, t := range explore.Libraries {
		names = append(names, t.Name)
	}
	return names
}

// lookup is the rung name among Locks: the page's first (its Redlock on
// PageMasters masters, where LookupAny's has five), then the libraries.
func lookup(name string) (explore.Target, error) {
	if t, err := explore.Lookup(name); err == nil {
		return t, nil
	}
	for _, t := range explore.Libraries {
		if t.Name == name {
			return explore.LookupAny(name)
		}
	}
	return explore.Target{}, fmt.Errorf("explore: no rung %q to explore", name)
}

// Hold takes the stack's run guard for an exploration of lock, or
// answers why not (a 409 naming the run that holds it) and returns
// false; release lets it go. The Service's takes the guard through the
// load balancer, as a race does.
type Hold func(w http.ResponseWriter, r *http.Request, lock string) (release func(), ok bool)

// ServeHTTP serves /explore without the run guard (an Explorer of its
// own, outside a stack); a Service serves it with (serve).
func (e *Explorer) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.serve(w, r, nil) }

// serve answers /explore; a search takes the run guard with hold (nil:
// none) once it is known good, under the rate bound and alone.
func (e *Explorer) serve(w http.ResponseWriter, r *http.Request, hold Hold) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		writeJSON(w, http.StatusOK, map[string]any{"locks": e.Locks(), "budget_ms": e.budget().Milliseconds()})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		fail(w, http.StatusMethodNotAllowed, "", "an exploration starts by POST /explore?lock=NAME")
		return
	}
	// Loopback only (the stack listens nowhere else), and never for
	// another site's page: the app's own rule.
	if status, reason, msg := (origin.Hosts{}).Check(r); status != 0 {
		fail(w, status, reason, msg)
		return
	}
	t, sched, err := e.parse(r)
	var lease time.Duration
	if err == nil {
		lease, err = leaseParam(r)
	}
	if err == nil && sched != nil && lease != 0 {
		err = errors.New("lease_ms and token cannot go together: a token names its lease")
	}
	if err != nil {
		body := map[string]any{"error": err.Error(), "reason": "bad_request", "locks": e.Locks()}
		if ne := (*number.Error)(nil); errors.As(err, &ne) {
			body["param"] = ne.Param
		}
		writeJSON(w, http.StatusBadRequest, body)
		return
	}
	if !e.busy.CompareAndSwap(false, true) {
		fail(w, http.StatusConflict, contract.ReasonRunInProgress, "another exploration is running: one at a time, each takes a core for up to "+e.budget().String())
		return
	}
	defer e.busy.Store(false)
	if wait := e.admit(time.Now()); wait > 0 {
		secs := int(wait.Round(time.Second) / time.Second)
		secs = max(secs, 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"reason": ReasonRateLimited, "retry_after_s": secs,
			"error": fmt.Sprintf("%d searches a minute at most on this stack (each keeps a core busy for up to %s beside the races' load): try again in %d s", e.perMinute(), e.budget(), secs)})
		return
	}
	if hold != nil {
		release, ok := hold(w, r, t.Name)
		if !ok {
			e.unadmit()
			return
		}
		defer release()
	}
	if sched != nil {
		res, err := reproduce(t, *sched)
		if err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"reason": ReasonNotReplayable, "error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, answer(res))
		return
	}
	run := e.run
	if run == nil {
		run = search
	}
	res := run(r.Context(), t, explore.Config{Budget: e.budget(), TTL: lease})
	if r.Context().Err() != nil {
		return // the asker left
	}
	writeJSON(w, http.StatusOK, answer(res))
}

// ReasonNotReplayable is the reason of a 422 from /explore: the token's
// schedule cannot be taken on the lock named (another lock's token, or
// its code changed what it sends).
const ReasonNotReplayable = "not_replayable"

// reproduce runs sched on t once: no search, the steps as the token
// names them, within their bounds (parse checked them).
func reproduce(t explore.Target, sched engine.Schedule) (explore.Result, error) {
	ex, err := explore.New(t, sched.Config)
	if err != nil {
		return explore.Result{}, err
	}
	defer ex.Close()
	return ex.Reproduce(sched.Clients, sched.Steps)
}

// ReasonRateLimited is the reason of a 429 from /explore.
const ReasonRateLimited = "rate_limited"

func (e *Explorer) perMinute() int {
	if e.PerMinute <= 0 {
		return ExplorePerMinute
	}
	return e.PerMinute
}

// admit counts a search starting at now and returns 0, or how long until
// one may start when the last minute had perMinute already.
func (e *Explorer) admit(now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.starts) > 0 && now.Sub(e.starts[0]) >= time.Minute {
		e.starts = e.starts[1:]
	}
	if len(e.starts) >= e.perMinute() {
		return e.starts[0].Add(time.Minute).Sub(now)
	}
	e.starts = append(e.starts, now)
	return 0
}

// unadmit uncounts the last search admit counted: it did not start.
func (e *Explorer) unadmit() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.starts); n > 0 {
		e.starts = e.starts[:n-1]
	}
}

func (e *Explorer) budget() time.Duration {
	if e.Budget <= 0 {
		return ExploreBudget
	}
	return e.Budget
}

func (e *Explorer) parse(r *http.Request) (explore.Target, *engine.Schedule, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return explore.Target{}, nil, fmt.Errorf("malformed query: %v", err)
	}
	for k, vs := range q {
		if k != "lock" && k != "lease_ms" && k != "token" {
			return explore.Target{}, nil, fmt.Errorf("unknown parameter %q (allowed: lock, lease_ms, token)", truncate(k, 32))
		}
		if len(vs) > 1 {
			return explore.Target{}, nil, fmt.Errorf("parameter %q given %d times", k, len(vs))
		}
	}
	name := q.Get("lock")
	if name == "" {
		return explore.Target{}, nil, fmt.Errorf("lock is required (explorable: %s)", strings.Join(e.Locks(), ", "))
	}
	t, err := lookup(name)
	if err != nil {
		return explore.Target{}, nil, fmt.Errorf("lock %q cannot be explored (explorable: %s)", truncate(name, 32), strings.Join(e.Locks(), ", "))
	}
	if !q.Has("token") {
		return t, nil, nil
	}
	s, err := parseToken(q.Get("token"))
	return t, s, err
}

// Bounds of a token /explore replays: what the page's searches and the
// checker's defaults find stays well within them.
const (
	maxTokenLen      = 2 << 10
	maxTokenSteps    = 200
	maxTokenSections = 4
	maxTokenFaults   = 4
	maxTokenTicks    = 16
)

// parseToken reads a replay token and checks it against the bounds above.
func parseToken(tok string) (*engine.Schedule, error) {
	if len(tok) > maxTokenLen {
		return nil, fmt.Errorf("token: %d bytes, at most %d", len(tok), maxTokenLen)
	}
	s, err := engine.ParseToken(tok)
	if err != nil {
		return nil, fmt.Errorf("token: %s", strings.TrimPrefix(err.Error(), "lockcheck: "))
	}
	c := s.Config
	switch {
	case len(s.Steps) > maxTokenSteps:
		return nil, fmt.Errorf("token: %d steps, at most %d", len(s.Steps), maxTokenSteps)
	case c.Sections < 1 || c.Sections > maxTokenSections:
		return nil, fmt.Errorf("token: %d sections per client, want 1 to %d", c.Sections, maxTokenSections)
	case c.TTL <= 0 || c.TTL > MaxExploreLease:
		return nil, fmt.Errorf("token: lease %s, want 1ms to %s", c.TTL, MaxExploreLease)
	case c.MaxFaults > maxTokenFaults || c.MaxTicks > maxTokenTicks:
		return nil, fmt.Errorf("token: %d faults and %d time passings at most, want at most %d and %d", c.MaxFaults, c.MaxTicks, maxTokenFaults, maxTokenTicks)
	}
	return &s, nil
}

// MaxExploreLease bounds ?lease_ms=: the explorer's time is virtual, so
// any lease costs the same; the bound keeps the figures readable.
const MaxExploreLease = time.Minute

// leaseParam reads ?lease_ms=, the lease the explorer's clients take (a
// race's, so that its answer speaks in the race's figures); 0 when
// absent: the explorer's default.
func leaseParam(r *http.Request) (time.Duration, error) {
	q := r.URL.Query()
	if !q.Has("lease_ms") {
		return 0, nil
	}
	ms, err := number.Whole("lease_ms", q.Get("lease_ms"), 1, MaxExploreLease.Milliseconds())
	return time.Duration(ms) * time.Millisecond, err
}

// search is the explorer's search, without a replay on a real server: an
// answer the page draws within its budget.
func search(ctx context.Context, t explore.Target, cfg explore.Config) explore.Result {
	ex, err := explore.New(t, cfg)
	if err != nil {
		return explore.Result{Target: t.Name, Verdict: explore.None}
	}
	defer ex.Close()
	return ex.Run(ctx)
}

func answer(r explore.Result) ExploreResult {
	a := ExploreResult{
		Lock: r.Target, Verdict: r.Verdict, Steps: r.Steps, Clients: r.Clients, Masters: r.Masters, Faults: r.Faults.String(),
		Schedules: r.Schedules, States: r.States, ElapsedMS: r.Elapsed.Milliseconds(), Oversold: r.Oversold,
		Rows: []Row{}, Summary: r.Line(), LeaseMS: r.Config.TTL.Milliseconds(), Token: r.Token(),
	}
	for i := range r.Clients {
		a.Columns = append(a.Columns, string(rune('A'+i)))
	}
	if r.Masters > 0 {
		a.Columns = append(a.Columns, fmt.Sprintf("masters m1-m%d", r.Masters))
	} else {
		a.Columns = append(a.Columns, "Redis")
	}
	a.Rows = rows(r.Trace)
	switch r.Verdict {
	case explore.None:
		a.Covered = r.Covered()
		a.Explain = "no violation found in what the search covered"
	case explore.Oversold:
		a.Explain = fmt.Sprintf("%d sale%s more than the stock went down: two clients wrote inside their sections at once", r.Oversold, plural(int(r.Oversold)))
	case explore.Deadlock:
		a.Explain = fmt.Sprintf("from the rows numbered 0 on, the live clients try for ever (time run on by %s, three times over) and never get a lock that no live client holds", 2*r.Config.TTL)
	}
	return a
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
