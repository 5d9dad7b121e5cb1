// Package race serves POST /race: the page's races, run from the harness
// side of the lab, never from an instance under test. The stack serves it
// on the load balancer's port (nginx or the built-in proxy routes /race
// here), so the page and curl reach it where they reach the app, while
// the instances being measured run only the app.
//
// A race resets the stock and sends n requests, c at a time, through the
// load balancer to /sale or /testLock under one lock, with the bench's
// closed loop. With scenario=NAME it runs one of the matrix's scenarios
// on the running stack (suite.Scenario.Stage: its app flags as
// parameters on every request, its faults armed with the stack's fault
// key, its hooks on the stack itself), at the ladder's size, and judges
// it against the ladder's verdict for the pair; a pair the matrix skips,
// or a scenario the stack cannot stage, is a 400 saying why. GET /race
// says which races the stack can run (Plan). A race streams Server-Sent
// Events: "progress" about five times a second (bench.Snapshot), then one
// "result" (Result: the bench's row, the counters read back and the
// verdict judged as the bench judges it, and the timeline of the critical
// sections the instances held) or one "failed" ({"error"}). One run at
// a time on the stack: a race takes the stack's run guard (package
// guard) before it answers, through the load balancer, and holds it to
// its last read-back; while another run holds it (another race, the
// bench, the demo, a scenario of the matrix), a race is a 409
// run_in_progress naming that run and since when.
package race

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// Bounds and defaults of a race.
const (
	MaxRequests        = 5000
	MaxConcurrency     = 200
	defaultRequests    = 2000
	defaultConcurrency = 100
	// bound ends a race that has not finished by then.
	bound = 5 * time.Minute
)

// Service runs races through the load balancer at LB (a base URL such as
// http://127.0.0.1:8080), one at a time.
type Service struct {
	LB string
	// Stage is the stack behind LB (nil: none known): its instances are
	// asked for the critical sections they held, which each race's
	// result carries as its timeline.
	Stage Stage
	Log   func(format string, args ...any) // nil: silent
	// Explore serves /explore beside the races (nil: a 404).
	Explore *Explorer
	// Key is the run guard's key (guard.KeyHeader): "" for the Stage's
	// Redis password, when it is a stack.
	Key string
	// Play serves /play beside them: "break it yourself" (nil: a 404).
	Play *Player

	client http.Client
}

// Stage is the running stack a race loads, as the race needs it beside
// its load balancer. *stack.Stack is one, and a Theatre.
type Stage interface {
	// InstanceURLs are the app instances' base URLs, each asked directly.
	InstanceURLs() []string
}

// Theatre is a Stage that can stage the matrix's scenarios (scenario=):
// the stack itself, whose hooks a scenario may fire (stopping its
// Redlock masters, say; never Stop), what it runs (Config), and the key
// its instances arm faults with (FaultKey). *stack.Stack is one.
type Theatre interface {
	suite.Stack
	Config() stack.Config
	FaultKey() string
}

var _ Theatre = (*stack.Stack)(nil)

// New returns a Service that races through lb, on st (nil: the stack is
// not known, and the races draw no timeline).
func New(lb string, st Stage) *Service {
	return &Service{LB: lb, Stage: st, Explore: NewExplorer(), Play: NewPlayer(), client: http.Client{Timeout: 5 * time.Second}}
}

// Close stops what the service started for itself (the games' replay
// server).
func (s *Service) Close() {
	if s.Play != nil {
		s.Play.Close()
	}
}

// Result is a race's "result" event: the bench's row, judged as the bench
// judges it (under a scenario, with the ladder's verdict beside it:
// "expected"), and its timeline (none when the stack is not known).
type Result struct {
	bench.Row
	Timeline *Timeline `json:"timeline,omitempty"`
	// Story is what the page says beside the verdict: what the lock
	// does, its flaw, what the scenario did (suite.StoryOf: the texts of
	// GET /strategies and docs/ladder.md).
	Story suite.Story `json:"story"`
}

// ServeHTTP answers POST /race, and GET /race with the races the stack
// can run (Plan). Bad input is a 400 and changes nothing; a lock the stack
// cannot serve is a 503 naming the server it lacks. /explore goes to
// Explore.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/play" && (r.ContentLength != 0 || len(r.TransferEncoding) > 0) {
		// Nothing here reads a body: one that comes slowly would hold the
		// connection after the answer.
		w.Header().Set("Connection", "close")
		fail(w, http.StatusRequestEntityTooLarge, "too_large", r.URL.Path+" takes no request body: its parameters go in the query")
		return
	}
	if r.URL.Path == "/play" {
		if s.Play == nil {
			fail(w, http.StatusNotFound, "", "this stack serves no games")
			return
		}
		s.Play.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/explore" {
		if s.Explore == nil {
			fail(w, http.StatusNotFound, "", "this stack serves no explorations")
			return
		}
		s.Explore.serve(w, r, s.holdExplore)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		s.plan(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		fail(w, http.StatusMethodNotAllowed, "", "a race starts by POST /race?lock=NAME&endpoint=sale|testLock: it resets the stock and sends load")
		return
	}
	// Loopback only (the stack listens nowhere else), and never for
	// another site's page: the app's own rule.
	if status, reason, msg := (origin.Hosts{}).Check(r); status != 0 {
		fail(w, status, reason, msg)
		return
	}
	p, status, reason, err := s.parse(r)
	if err != nil {
		failErr(w, status, reason, err)
		return
	}
	held, ok := s.hold(w, r, p.run())
	if !ok {
		return
	}
	defer letGo(r, held)
	s.run(w, r, p, held)
}

// letGo releases the race's guard (once: a second call does nothing).
func letGo(r *http.Request, held *guard.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	held.Release(ctx) // if it fails, the guard expires on its own
}

// hold takes the stack's run guard for run (nil when the app serves
// none), or answers why not: a 409 run_in_progress naming the run
// that holds it and since when, a 503 when it cannot be had.
func (s *Service) hold(w http.ResponseWriter, r *http.Request, run guard.Run) (*guard.Lease, bool) {
	lease, err := guard.Take(r.Context(), &s.client, s.LB, s.runKey(), run)
	var busy *guard.BusyError
	switch {
	case err == nil:
		return lease, true
	case errors.Is(err, guard.ErrNotServed):
		return nil, true
	case errors.As(err, &busy):
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(map[string]any{
			"error":  "another run holds the stack: " + busy.Holder.String() + "; one run at a time, so that none resets the stock under another",
			"reason": guard.ReasonBusy, "owner": busy.Holder.Owner, "since": busy.Holder.Since,
		})
	default:
		fail(w, http.StatusServiceUnavailable, contract.ReasonNoRace, "the stack's run guard could not be taken: "+err.Error())
	}
	return nil, false
}

// holdExplore takes the run guard for an exploration of lock (Hold):
// while a run holds the stack, no search takes a core from under it.
func (s *Service) holdExplore(w http.ResponseWriter, r *http.Request, lock string) (func(), bool) {
	if s.runKey() == "" {
		return func() {}, true // no stack known: no guard to take
	}
	held, ok := s.hold(w, r, guard.Run{Kind: "explore", Lock: lock, Guest: true})
	if !ok {
		return nil, false
	}
	return func() { letGo(r, held) }, true
}

// run is the race, as the app names it in the run guard: a guest's, for
// anyone on the loopback may ask for it, so that the owner's runs (the
// bench, the demo) take the stack from it rather than wait (package
// guard).
func (p params) run() guard.Run {
	return guard.Run{Kind: "race", Lock: p.lock, Endpoint: p.endpoint, Scenario: p.scenario(), Guest: true}
}

// runKey is the key the race takes the guard with: Key, or the stack's
// Redis password when the Stage is a stack.
func (s *Service) runKey() string {
	if s.Key != "" {
		return s.Key
	}
	if k, ok := s.Stage.(interface{ RedisPassword() string }); ok {
		return k.RedisPassword()
	}
	return ""
}

// params is one race's validated input.
type params struct {
	lock, endpoint string
	n, c, stock    int // stock 0: the bench's default
	wait           lock.WaitMode
	staged         *suite.Staged // scenario=: the scenario on this stack
	rung           lock.Info     // as the instances describe it
}

// parse validates the query against the ladder the instances serve (GET
// /strategies through the load balancer).
func (s *Service) parse(r *http.Request) (params, int, string, error) {
	bad := func(format string, args ...any) (params, int, string, error) {
		return params{}, http.StatusBadRequest, "", fmt.Errorf(format, args...)
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return bad("malformed query: %v", err)
	}
	allowed := []string{"lock", "endpoint", "n", "c", "wait", "scenario"}
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			return bad("unknown parameter %q (allowed: %s)", truncate(k, 32), strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return bad("parameter %q given %d times", k, len(vs))
		}
	}
	p := params{lock: q.Get("lock"), endpoint: q.Get("endpoint")}
	if p.lock == "" {
		return bad("missing lock: say ?lock=NAME")
	}
	if p.endpoint != "sale" && p.endpoint != "testLock" {
		return bad("endpoint: %q is not sale or testLock", truncate(p.endpoint, 32))
	}
	var sc suite.Scenario
	n, c := defaultRequests, defaultConcurrency
	if q.Has("scenario") {
		if sc, err = suite.LookupScenario(q.Get("scenario")); err != nil {
			return bad("scenario: unknown scenario %q (scenarios: %s)", truncate(q.Get("scenario"), 32), strings.Join(suite.ScenarioNames(), ", "))
		}
		if q.Has("wait") {
			return bad("wait= does not go with scenario=: the scenario says how its requests wait")
		}
		n, c, p.stock = suite.LadderSize(sc.Name)
	}
	if p.n, err = count(q, "n", n, MaxRequests); err != nil {
		return bad("%w", err)
	}
	if p.c, err = count(q, "c", c, MaxConcurrency); err != nil {
		return bad("%w", err)
	}
	rungs, err := s.strategies(r.Context())
	if err != nil {
		return params{}, http.StatusServiceUnavailable, contract.ReasonNoRace, fmt.Errorf("the instances' ladder could not be read: %w", err)
	}
	i := slices.IndexFunc(rungs, func(x lock.Info) bool { return x.Name == p.lock })
	if i < 0 {
		return bad("unknown lock %q", truncate(p.lock, 64))
	}
	rung := rungs[i]
	p.rung = rung
	if q.Has("wait") {
		if p.wait, err = lock.ParseWaitMode(q.Get("wait")); err != nil {
			return bad("wait: unknown wait mode %q (valid: %v)", truncate(q.Get("wait"), 32), lock.WaitModes)
		}
		if !slices.Contains(rung.Waits, p.wait) {
			return bad("wait=%s does not apply to lock %q (it waits by %v)", p.wait, rung.Name, rung.Waits)
		}
	}
	if sc.Name != "" {
		st, err := s.stage(sc, rung, p.endpoint)
		if err != nil {
			reason := contract.ReasonCannotStage
			if errors.Is(err, suite.ErrNotInMatrix) {
				reason = contract.ReasonNotInMatrix
			}
			return params{}, http.StatusBadRequest, reason, err
		}
		p.staged = &st
	}
	if rung.Unavailable != "" {
		return params{}, http.StatusServiceUnavailable, contract.ReasonServerMissing,
			fmt.Errorf("lock %q cannot run here: %s", rung.Name, rung.Unavailable)
	}
	return p, 0, "", nil
}

// stage stages sc's run of rung on the stack (suite.Scenario.Stage).
func (s *Service) stage(sc suite.Scenario, rung lock.Info, endpoint string) (suite.Staged, error) {
	th, ok := s.Stage.(Theatre)
	if !ok {
		return suite.Staged{}, fmt.Errorf("%w: %s needs the stack itself, which this race service was not given", suite.ErrCannotStage, sc.Name)
	}
	return sc.Stage(th, th.Config(), th.FaultKey() != "", rung, endpoint)
}

// strategies reads the ladder the instances serve.
func (s *Service) strategies(ctx context.Context) ([]lock.Info, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.LB+"/strategies", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /strategies: %s", resp.Status)
	}
	var rungs []lock.Info
	if err := json.NewDecoder(resp.Body).Decode(&rungs); err != nil {
		return nil, fmt.Errorf("GET /strategies: %w", err)
	}
	return rungs, nil
}

// run streams the race's events until it ends, the bound passes or the
// reader goes away (which stops the load).
func (s *Service) run(w http.ResponseWriter, r *http.Request, p params, held *guard.Lease) {
	ctx, cancel := context.WithTimeout(r.Context(), bound)
	defer cancel()
	// The race outlives any write deadline the server sets for ordinary
	// requests.
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	rc.Flush()

	progress := make(chan bench.Snapshot, 1)
	type outcome struct {
		row bench.Row
		err error
	}
	done := make(chan outcome, 1)
	cfg := bench.Config{
		URL: s.LB, Requests: p.n, Concurrency: p.c, Stock: p.stock, Wait: string(p.wait), Instances: s.instances(),
		Guard: held,
		OnProgress: func(snap bench.Snapshot) {
			select { // the latest only: a slow reader skips some
			case <-progress:
			default:
			}
			progress <- snap
		},
	}
	var lease time.Duration // the timeline's: what the race asked
	if p.staged != nil {
		lease = p.staged.Lease
	}
	go func() {
		var o outcome
		defer func() {
			if v := recover(); v != nil {
				o = outcome{err: fmt.Errorf("the race panicked: %v", v)}
			}
			done <- o
		}()
		if p.staged == nil {
			o.row, o.err = bench.RunOne(ctx, cfg, p.lock, p.endpoint)
			return
		}
		o.row, o.err = s.runStaged(ctx, cfg, p)
	}()
	if s.Log != nil {
		s.Log("race: lock=%s endpoint=%s n=%d c=%d wait=%s scenario=%s", p.lock, p.endpoint, p.n, p.c, p.wait, p.scenario())
	}
	for {
		select {
		case snap := <-progress:
			if !event(w, rc, r, "progress", snap) {
				cancel() // the reader went away: stop the load
			}
		case o := <-done:
			if o.err != nil {
				letGo(r, held)
				event(w, rc, r, "failed", map[string]string{"lock": p.lock, "endpoint": p.endpoint, "error": o.err.Error()})
				return
			}
			res := Result{Row: o.row, Story: suite.StoryOf(p.rung, p.scenario())}
			if s.Stage != nil {
				res.Timeline = newTimeline(o.row, lease)
				if st := res.Timeline.Stuck; st != nil {
					// The race's lock, in its scope: read while it holds it.
					s.readStuck(r.Context(), st, p.endpoint, held.Token())
				}
			}
			// Free the stack before the last event: the page starts its
			// next race as soon as it reads it.
			letGo(r, held)
			event(w, rc, r, "result", res)
			return
		}
	}
}

// runStaged runs p's scenario on the stack, as the matrix runs it on a
// stack of its own (a bench session: each run once the stack is whole,
// the ladder's verdict beside the one measured), with the stack's fault
// key on every request, and puts the stack back after (the hooks' Undo).
func (s *Service) runStaged(ctx context.Context, cfg bench.Config, p params) (bench.Row, error) {
	th := s.Stage.(Theatre) // stage made sure
	cfg.FaultKey = th.FaultKey()
	if p.staged.Direct {
		cfg.URL = th.InstanceURLs()[0]
	}
	sess, err := bench.Open(ctx, cfg, topology{s.LB, th}, nil)
	if err != nil {
		return bench.Row{}, err
	}
	defer sess.Close()
	row, err := sess.Run(ctx, p.lock, p.endpoint, p.staged.Shape)
	if uerr := p.staged.Undo(context.WithoutCancel(ctx)); uerr != nil && err == nil {
		err = fmt.Errorf("putting the stack back after %s: %w", p.scenario(), uerr)
	}
	return row, err
}

// topology is the stack as a bench session sees it: the load balancer the
// race was given, the stack's instances.
type topology struct {
	lb string
	st Stage
}

func (t topology) URL() string            { return t.lb }
func (t topology) InstanceURLs() []string { return t.st.InstanceURLs() }

// scenario is the race's scenario, "" for none.
func (p params) scenario() string {
	if p.staged == nil {
		return ""
	}
	return p.staged.Shape.Scenario
}

// instances are the stack's instances, asked for their sections (none
// when the stack is not known).
func (s *Service) instances() []string {
	if s.Stage == nil {
		return nil
	}
	return s.Stage.InstanceURLs()
}
