package bench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// Defaults used when the matching Config field is zero; the command
// lines (package internal/cli) show them.
const (
	DefaultRequests    = 5000
	DefaultConcurrency = 100
	DefaultStock       = 1000
	DefaultTimeout     = 30 * time.Second
)

// MaxSKUs is the most items a run spreads over: the app's /reset bound.
const MaxSKUs = inventory.MaxSKUs

// defaultCheckTimeout is Config.CheckTimeout's default.
const defaultCheckTimeout = 10 * time.Second

// The endpoints a run can load, as named in Config.Endpoints and Row.Endpoint.
const (
	EndpointSale     = "sale"
	EndpointTestLock = "testLock"
)

// ScenarioNormal is the scenario of a plain benchmark: three instances
// behind the load balancer, no fault.
const ScenarioNormal = "normal"

// ErrNotLoopback is returned (wrapped: test it with errors.Is) when the
// target is not a loopback address and Config.AllowRemote is false: load
// only ever targets this machine.
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
	// With SKUs, each item gets that stock.
	Stock int
	// SKUs spreads each run over items "1" to "K" (sku=, hit i to item
	// i mod K), reset with /reset?stock=N&skus=K and judged item by item;
	// 0, the default, runs on the lab's one item. At most MaxSKUs.
	SKUs int
	// Timeout bounds each request; default 30s.
	Timeout time.Duration
	// Wait is how every request waits for a busy lock, sent as wait=:
	// "queue", "fixed" (the articles' sleep), "backoff", "notify", "relay"
	// or "cohort" (redlock), to every lock that takes it; "" leaves it to
	// the app's -wait default. fair always waits for its handoff.
	Wait string
	// AllowRemote lifts the loopback-only guard on the URL and on every
	// connection dialled.
	AllowRemote bool
	// Run says what runs to the stack's run guard (package guard), which
	// the runs hold from before their first reset to their last
	// read-back, so that no other run resets the stock or sells under
	// them; the app names the holder from it, for whoever finds the
	// stack busy. Default: Kind "bench".
	Run guard.Run
	// RunKey is the key the guard is taken with (guard.KeyHeader): the
	// stack's Redis password. "": the Topology's (Open), when it has one
	// (*stack.Stack does); without it a stack with a guard refuses the
	// runs (guard.ErrNoKey).
	RunKey string
	// Guard is a guard the caller holds already (a race from the page
	// takes it before it answers): the runs' resets carry its token and
	// they take none of their own. nil: they take one.
	Guard *guard.Lease
	// FaultKey, when set, goes with every load request
	// (contract.HeaderFaultKey): instances given that key (the stack's)
	// then arm the faults a shape asks for.
	FaultKey string
	// Progress receives progress (nil = none): a live line rewritten with \r
	// when it is a terminal, otherwise one line per finished run.
	Progress io.Writer
	// Brief keeps the terminal short (make demo): Progress keeps to its
	// live line (on a terminal a finished run leaves no line of its own,
	// elsewhere one plain line every twentieth run and the last; a lock not
	// run is said under the table, not by the progress), and
	// CompareReports's table is one line per lock (WritePairs), the
	// reports' paths one line.
	Brief bool
	// Previous are the rows of an earlier run of the same requests and
	// concurrency (Compare reads its folder's latest.json when this is
	// nil): the progress line expects each run to take what it took then,
	// scaled by how the runs done so far compare, so that "~1m10s left"
	// counts the slow locks still to come.
	Previous []Row
	// OnProgress, when set, is called with the run's figures so far about
	// five times a second while a run's requests are answered (POST /race
	// streams them to the page).
	OnProgress func(Snapshot)

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

// Normalize applies the defaults and checks c. Run does it itself;
// package suite checks the base of its runs once, before any stack starts.
func (c Config) Normalize() (Config, error) {
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
	case c.SKUs < 0 || c.SKUs > MaxSKUs:
		return c, fmt.Errorf("bench: SKUs must be in [0, %d], got %d", MaxSKUs, c.SKUs)
	case c.SKUs > c.Requests:
		return c, fmt.Errorf("bench: SKUs (%d) must not exceed Requests (%d): an item without requests judges nothing", c.SKUs, c.Requests)
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
		c.CheckTimeout = defaultCheckTimeout
	}
	if c.Run.Kind == "" {
		c.Run.Kind = "bench"
	}
	if err := c.Run.Check(); err != nil {
		return c, fmt.Errorf("bench: Run: %w", err)
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
