// Package bench replays the classic `ab -n 5000 -c 100` test against each
// lock strategy through the load balancer, reads the counters back and
// judges every run: SAFE, OVERSOLD, LOST UPDATES or DEADLOCK.
//
// Each run is POST /reset?stock=N, then the load, then GET /stock. The load
// is a closed loop driven by vegeta as a library: Concurrency workers, each
// sending its next request as soon as the previous one is answered, until
// exactly Requests requests have been sent to POST /sale?lock=L or
// POST /testLock?lock=L (POST, not ab's GET: see loadMethod). Verdicts are
// computed only from what the app answered and what GET /stock reads back
// afterwards (see Judge); nothing is assumed about a strategy.
//
// A scenario (docs/scenarios.md) shapes a run further: extra query
// parameters on every request or on a few armed hits, chosen by hit index
// (fault=crash on the hits at 10%, 30%, 50% and 70% of the stock, say),
// actions on the stack at a given hit (stop two Redlock masters), and a
// stall bound: when nothing gets through the lock for longer than that
// after the first fault, the run is stopped and judged DEADLOCK. RunMatrix
// runs every pair of scenario and lock the ladder gives a verdict for, each
// scenario on a fresh stack, and WriteGrid lays the verdicts out beside the
// ladder's.
//
// cmd/bench and `make demo` only parse flags and call Compare (or
// CompareMatrix): Run (RunMatrix), then the writers (WriteTable,
// WriteReports; WriteGrid, WriteMatrixReports). WriteJSON and
// WriteMarkdown write the rows alone.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/lock"
)

// Defaults used when the matching Config field is zero.
const (
	DefaultRequests     = 5000
	DefaultConcurrency  = 100
	DefaultStock        = 1000
	DefaultTimeout      = 30 * time.Second
	DefaultCheckTimeout = 10 * time.Second
)

// The endpoints a run can load, as named in Config.Endpoints and Row.Endpoint.
const (
	EndpointSale     = "sale"
	EndpointTestLock = "testLock"
)

// ScenarioNormal is the scenario of a plain benchmark: three instances
// behind the load balancer, no fault.
const ScenarioNormal = "normal"

// ErrNotLoopback is returned when the target is not a loopback address and
// Config.AllowRemote is false: load only ever targets this machine.
var ErrNotLoopback = errors.New("bench: refusing a non-loopback target (set AllowRemote to override)")

// Config describes a benchmark. Zero values take the documented defaults.
type Config struct {
	// URL is the base URL of the load balancer, e.g. http://127.0.0.1:8080.
	URL string
	// Locks are the strategies to run; default: every name GET /strategies lists.
	Locks []string
	// Endpoints are "sale" and/or "testLock"; default both.
	Endpoints []string
	// Requests is the number of requests per run (ab -n); default 5000.
	Requests int
	// Concurrency is the number of closed-loop workers (ab -c); default 100.
	Concurrency int
	// Stock is set by POST /reset?stock=N before each run; default 1000.
	Stock int
	// Timeout bounds each request; default 30s.
	Timeout time.Duration
	// Wait is how every request waits for a busy lock, sent as wait=:
	// "fixed" (the articles' sleep), "backoff" or "notify"; "" leaves it to
	// the app's -wait default. fair always waits for its handoff.
	Wait string
	// AllowRemote lifts the loopback-only guard on the URL and on every
	// connection dialled.
	AllowRemote bool
	// Progress receives progress (nil = none): a live line rewritten with \r
	// when it is a terminal, otherwise one line per finished run.
	Progress io.Writer

	// Instances are the app instances' base URLs, asked directly for the
	// critical sections they held (GET /sections) after each run; none:
	// overlaps are not counted (Row.Sections is -1).
	Instances []string
	// HistoryDir receives porcupine's HTML view of each run whose history
	// is illegal; "" writes none.
	HistoryDir string
	// CheckTimeout bounds the linearizability check of one run; default
	// 10s. A check that runs out says "unknown".
	CheckTimeout time.Duration
}

// Row is the outcome of one run: one lock, one endpoint, one scenario.
type Row struct {
	// Scenario names the conditions of the run (see Scenarios): "normal"
	// for a plain benchmark.
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Endpoint string `json:"endpoint"`
	// Wait is the wait= the requests carried ("" for the app's default).
	Wait string `json:"wait,omitempty"`

	// Requests is the number of requests sent and answered (or failed).
	Requests int `json:"requests"`
	// OK counts HTTP 200 answers.
	OK int `json:"ok"`
	// Codes counts every other outcome by status ("409", "503", "502"),
	// and "error" for transport errors (refused, reset, timeout).
	Codes map[string]int `json:"codes"`
	// Instances counts 200 answers per X-Instance header: it shows the
	// load was spread over the instances.
	Instances map[string]int `json:"instances"`

	// Initial is the stock the reset answered; Remaining, Sold and Num are
	// read back from GET /stock after the run.
	Initial   int64 `json:"initial"`
	Remaining int64 `json:"remaining"`
	Sold      int64 `json:"sold"`
	Num       int64 `json:"num"`

	// Oversold and LostUpdates are computed by Judge.
	Oversold    int64 `json:"oversold"`
	LostUpdates int64 `json:"lost_updates"`
	// LostAnswers, computed by Judge, counts sales the counters hold whose
	// 200 never reached the client, all within the requests the app never
	// answered (502, 504, transport errors): an instance that crashed after
	// selling.
	LostAnswers int64 `json:"lost_answers,omitempty"`

	// RPS is answered requests per second of the run (ab's "Requests per
	// second"); latencies are per request, in milliseconds.
	RPS        float64 `json:"rps"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	DurationMs float64 `json:"duration_ms"`

	// Armed counts the outcomes of the requests that carried the
	// scenario's fault, as Codes does ("200", "503", "error"): a fault
	// fires only in a request that got the lock, so an armed request that
	// answered 503 armed nothing.
	Armed map[string]int `json:"armed,omitempty"`

	// StallMs is the longest time with no progress: no answer from inside
	// the critical section (a 200, or on /sale a 409, the sold-out answer
	// the sale gives under the lock). It is measured after the first fault
	// of the run (an armed request sent, a hook done), or over the whole run
	// when the scenario arms none, up to its end.
	StallMs float64 `json:"stall_ms"`
	// StallBoundMs is the scenario's stall bound (0: none): a run that
	// stalls longer is stopped early and judged DEADLOCK.
	StallBoundMs float64 `json:"stall_bound_ms,omitempty"`
	// Stopped says the run was stopped before all its requests were sent,
	// because it stalled past the bound.
	Stopped bool `json:"stopped,omitempty"`

	// Linearizable is the history checker's finding on the run's answers:
	// ok, illegal or unknown (see package history); Evidence says why a
	// history is illegal, and Visualization is the file that shows it.
	Linearizable  string `json:"linearizable"`
	Evidence      string `json:"evidence,omitempty"`
	Visualization string `json:"visualization,omitempty"`
	// PossiblyApplied counts the requests without a definite answer (no
	// answer at all, or Redis failed under them): the checker lets each
	// take effect or not.
	PossiblyApplied int `json:"possibly_applied"`
	// Overlaps counts critical sections that wrote while another holder of
	// the same lock was still inside; Sections is how many sections the
	// instances reported for the run (-1: not asked, -2: some instance did
	// not answer or had forgotten some, so Overlaps is a lower bound).
	Overlaps int `json:"overlaps"`
	Sections int `json:"sections"`

	// Verdict is SAFE, OVERSOLD, LOST UPDATES, OVERLAP or DEADLOCK (see Judge).
	Verdict string `json:"verdict"`
	// Expected is the ladder's verdict for the pair, in matrix runs.
	Expected string `json:"expected,omitempty"`

	// The run's requests as history operations (times since began), for
	// the fault suite's own figures; not in the reports.
	ops   []history.Op
	began time.Time
}

// Run benchmarks every lock in cfg.Locks (default: all of GET /strategies)
// on every endpoint, one run after the other, in that order. It stops at the
// first failed run and returns the rows finished so far with the error.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	h := newHarness(cfg)
	defer h.close()

	offered, err := h.strategies(ctx)
	if err != nil {
		return nil, err
	}
	locks := cfg.Locks
	if len(locks) == 0 {
		locks = offered
	} else if err := checkLocks(locks, offered); err != nil {
		return nil, err
	}

	p := newProgress(cfg.Progress)
	for _, lock := range locks {
		for _, ep := range cfg.Endpoints {
			p.fit(lock, ep)
		}
	}
	p.plan(len(locks) * len(cfg.Endpoints))
	rows := make([]Row, 0, len(locks)*len(cfg.Endpoints))
	for _, lock := range locks {
		for _, ep := range cfg.Endpoints {
			row, err := h.runOne(ctx, lock, ep, p, nil)
			if err != nil {
				return rows, err
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// RunOne resets the stock, fires cfg.Requests requests at
// /{endpoint}?lock={lock} with cfg.Concurrency closed-loop workers, reads the
// counters back and judges the run.
func RunOne(ctx context.Context, cfg Config, lock, endpoint string) (Row, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return Row{}, err
	}
	h := newHarness(cfg)
	defer h.close()
	return h.runOne(ctx, lock, endpoint, newProgress(cfg.Progress), nil)
}

// normalize applies the defaults and validates cfg.
func (c Config) normalize() (Config, error) {
	u, err := checkURL(c.URL, c.AllowRemote)
	if err != nil {
		return c, err
	}
	c.URL = u
	if c.Wait != "" {
		if _, err := lock.ParseWaitMode(c.Wait); err != nil { // the app's own list
			return c, fmt.Errorf("bench: %w", err)
		}
	}

	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"Requests", &c.Requests, DefaultRequests},
		{"Concurrency", &c.Concurrency, DefaultConcurrency},
		{"Stock", &c.Stock, DefaultStock},
	} {
		switch {
		case *f.v < 0:
			return c, fmt.Errorf("bench: %s must not be negative, got %d", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	switch {
	case c.Timeout < 0:
		return c, fmt.Errorf("bench: Timeout must not be negative, got %s", c.Timeout)
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.CheckTimeout < 0:
		return c, fmt.Errorf("bench: CheckTimeout must not be negative, got %s", c.CheckTimeout)
	case c.CheckTimeout == 0:
		c.CheckTimeout = DefaultCheckTimeout
	}
	insts := make([]string, len(c.Instances))
	for i, in := range c.Instances {
		if insts[i], err = checkURL(in, c.AllowRemote); err != nil {
			return c, fmt.Errorf("bench: instance %q: %w", in, err)
		}
	}
	c.Instances = insts

	if len(c.Endpoints) == 0 {
		c.Endpoints = []string{EndpointSale, EndpointTestLock}
	} else {
		eps := make([]string, len(c.Endpoints))
		for i, ep := range c.Endpoints {
			if eps[i], err = normalizeEndpoint(ep); err != nil {
				return c, err
			}
		}
		c.Endpoints = eps
	}
	for _, l := range c.Locks {
		if strings.TrimSpace(l) == "" {
			return c, errors.New("bench: empty lock name in Locks")
		}
	}
	return c, nil
}

func normalizeEndpoint(ep string) (string, error) {
	switch e := strings.TrimPrefix(ep, "/"); e {
	case EndpointSale, EndpointTestLock:
		return e, nil
	default:
		return "", fmt.Errorf("bench: unknown endpoint %q (want %q or %q)", ep, EndpointSale, EndpointTestLock)
	}
}

// checkURL validates the base URL and returns it without a trailing slash.
// Unless allowRemote, its host must be a loopback IP literal or "localhost";
// names are not resolved here, the dialer checks every connection as well.
func checkURL(raw string, allowRemote bool) (string, error) {
	if raw == "" {
		return "", errors.New("bench: URL is required (e.g. http://127.0.0.1:8080)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("bench: bad URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("bench: bad URL %q: scheme must be http or https", raw)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("bench: bad URL %q: no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("bench: bad URL %q: want a base URL without query or fragment", raw)
	}
	if !allowRemote && !isLoopbackHost(u.Hostname()) {
		return "", fmt.Errorf("%w: %q", ErrNotLoopback, raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkLocks(locks, offered []string) error {
	known := make(map[string]bool, len(offered))
	for _, o := range offered {
		known[o] = true
	}
	for _, l := range locks {
		if !known[l] {
			return fmt.Errorf("bench: the app offers no lock %q (GET /strategies lists: %s)", l, strings.Join(offered, ", "))
		}
	}
	return nil
}
