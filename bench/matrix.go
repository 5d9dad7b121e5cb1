package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// Topology is a running stack as the matrix uses it; *stack.Stack is one.
type Topology interface {
	URL() string            // the load balancer
	InstanceURLs() []string // each app instance, directly
	Stop() error
}

// MasterControl is a Topology whose Redlock masters can be stopped and
// started again, by 0-based index; *stack.Stack is one.
type MasterControl interface {
	StopMaster(i int) error
	StartMaster(i int) error
}

var (
	_ Topology      = (*stack.Stack)(nil)
	_ MasterControl = (*stack.Stack)(nil)
)

// Skip is a pair of scenario and lock the matrix does not run, and why.
type Skip struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Reason   string `json:"reason"`
}

// MatrixConfig describes a strategies x scenarios run. Zero values take
// the documented defaults.
type MatrixConfig struct {
	// Scenarios to run, by name; default every one of Scenarios().
	Scenarios []string
	// Locks to run; default LadderLocks(). Pairs the ladder gives no
	// verdict for are skipped, each with its reason.
	Locks []string
	// Endpoints to load; default only "sale".
	Endpoints []string
	// Requests, Concurrency, Stock and Timeout of each run, as in Config.
	Requests    int
	Concurrency int
	Stock       int
	Timeout     time.Duration

	// Stack is the template of each scenario's stack: AppBinary,
	// NginxConf, the Redis and LB modes, Log, StartTimeout, AppArgs (before
	// the scenario's). Addresses are always free loopback ports, so a
	// matrix never collides with a stack already up; Dir "" gives each
	// stack a temporary run dir, else each gets Dir/<scenario>.
	Stack stack.Config
	// RequireReal is passed to every stack: no embedded stand-ins.
	RequireReal bool
	// Start starts a stack; default stack.Start. Tests put fakes here.
	Start func(ctx context.Context, cfg stack.Config) (Topology, error)

	// Progress receives a line per scenario and per run (nil = none).
	Progress io.Writer
	// HistoryDir receives the HTML view of each illegal history, as in
	// Config; CompareMatrix defaults it to its report dir.
	HistoryDir string
}

// settleTimeout bounds the wait for every instance to answer /healthz
// before a run (a crashed one is being restarted by the supervisor).
const settleTimeout = 30 * time.Second

// RunMatrix runs every pair of cfg.Scenarios and cfg.Locks the ladder gives
// a verdict for: for each scenario a fresh stack, then each of its locks,
// one run after the other, each row carrying the ladder's expected verdict
// beside the one measured. It returns the rows, the pairs skipped with
// their reasons, and the first error (with the rows finished before it).
func RunMatrix(ctx context.Context, cfg MatrixConfig) ([]Row, []Skip, error) {
	scenarios, err := pickScenarios(cfg.Scenarios)
	if err != nil {
		return nil, nil, err
	}
	locks := cfg.Locks
	if len(locks) == 0 {
		locks = LadderLocks()
	}
	start := cfg.Start
	if start == nil {
		start = startStack
	}
	base, err := cfg.base()
	if err != nil {
		return nil, nil, err
	}

	p := newProgress(cfg.Progress)
	var rows []Row
	var skips []Skip
	for _, sc := range scenarios {
		var pairs []matrixPair
		for _, lock := range locks {
			for _, ep := range base.Endpoints {
				v, ok, reason := sc.Expected(lock, ep)
				if !ok {
					if ep == base.Endpoints[0] {
						skips = append(skips, Skip{Scenario: sc.Name, Lock: lock, Reason: reason})
					}
					continue
				}
				pairs = append(pairs, matrixPair{lock, ep, v})
				p.fit(sc.Name+" "+lock, ep)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		p.note(fmt.Sprintf("%s: %s", sc.Name, sc.About))
		top, err := start(ctx, sc.stackConfig(cfg))
		if err != nil {
			return rows, skips, fmt.Errorf("bench: scenario %s: starting the stack: %w", sc.Name, err)
		}
		scRows, scSkips, runErr := runScenario(ctx, sc, top, base, pairs, p)
		rows = append(rows, scRows...)
		skips = append(skips, scSkips...)
		if err := top.Stop(); err != nil && runErr == nil {
			runErr = fmt.Errorf("bench: scenario %s: stopping the stack: %w", sc.Name, err)
		}
		if runErr != nil {
			return rows, skips, runErr
		}
	}
	return rows, skips, nil
}

// startStack is stack.Start as a Topology (a nil one on error).
func startStack(ctx context.Context, c stack.Config) (Topology, error) {
	s, err := stack.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// base is the run configuration the matrix's scenarios share, defaults
// applied and checked, on a stand-in URL: each scenario has its own.
func (cfg MatrixConfig) base() (Config, error) {
	eps := cfg.Endpoints
	if len(eps) == 0 {
		eps = []string{EndpointSale}
	}
	return Config{
		URL: "http://127.0.0.1:1", Locks: cfg.Locks, Endpoints: eps,
		Requests: cfg.Requests, Concurrency: cfg.Concurrency, Stock: cfg.Stock, Timeout: cfg.Timeout,
		HistoryDir: cfg.HistoryDir,
	}.normalize()
}

// matrixPair is one run of the matrix and the verdict the ladder expects.
type matrixPair struct{ lock, endpoint, expected string }

// runScenario runs pairs on the scenario's running stack.
func runScenario(ctx context.Context, sc Scenario, top Topology, base Config, pairs []matrixPair, p *progress) ([]Row, []Skip, error) {
	cfg := base
	cfg.URL = top.URL()
	if sc.Direct {
		urls := top.InstanceURLs()
		if len(urls) == 0 {
			return nil, nil, fmt.Errorf("bench: scenario %s: the stack has no instance to load directly", sc.Name)
		}
		cfg.URL = urls[0]
	}
	cfg.Instances = top.InstanceURLs()
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, nil, fmt.Errorf("bench: scenario %s: %w", sc.Name, err)
	}
	h := newHarness(cfg)
	defer h.close()
	if err := settle(ctx, h, top); err != nil {
		return nil, nil, fmt.Errorf("bench: scenario %s: %w", sc.Name, err)
	}
	offered, err := h.strategies(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: scenario %s: %w", sc.Name, err)
	}

	var rows []Row
	var skips []Skip
	for _, pr := range pairs {
		if !slices.Contains(offered, pr.lock) {
			if !slices.ContainsFunc(skips, func(s Skip) bool { return s.Lock == pr.lock }) {
				skips = append(skips, Skip{Scenario: sc.Name, Lock: pr.lock,
					Reason: "the app does not offer it (GET /strategies)"})
			}
			continue
		}
		ld := sc.load(top, cfg.Requests, cfg.Stock)
		ld.expected = pr.expected
		ld.settle = func(ctx context.Context) error { return settle(ctx, h, top) }
		p.setScope(sc.Name)
		row, err := h.runOne(ctx, pr.lock, pr.endpoint, p, ld)
		p.setScope("")
		if uerr := undo(ctx, sc, top); uerr != nil && err == nil {
			err = fmt.Errorf("bench: scenario %s: %w", sc.Name, uerr)
		}
		if err != nil {
			return rows, skips, err
		}
		rows = append(rows, row)
	}
	return rows, skips, nil
}

// undo puts the stack back after a run whose hooks changed it.
func undo(ctx context.Context, sc Scenario, top Topology) error {
	var errs []error
	for _, h := range sc.Hooks {
		if h.Undo != nil {
			if err := h.Undo(ctx, top); err != nil {
				errs = append(errs, fmt.Errorf("undoing %q: %w", h.About, err))
			}
		}
	}
	return errors.Join(errs...)
}

// errNotReady marks a stack that was not whole again within its bound: a
// run must not start (or read back) against it.
var errNotReady = errors.New("the stack is not whole")

// settle waits, at most settleTimeout, until the stack is whole: every
// instance answers GET /healthz (which pings Redis) itself, and the load
// balancer routes to each of them. After a crash the supervisor is
// restarting one; after its connections were refused, nginx skips it for
// its fail_timeout; a run must not start against a stack that is half up,
// nor read back its counters there.
func settle(ctx context.Context, h *harness, top Topology) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	names := map[string]bool{}
	for _, base := range top.InstanceURLs() {
		var last error
		for {
			var name string
			if name, last = healthz(ctx, h.client, base); last == nil {
				names[name] = true
				break
			}
			if !sleepCtx(ctx, 25*time.Millisecond) {
				return fmt.Errorf("%w: %s: %w", errNotReady, base, last)
			}
		}
	}
	// Through the load balancer, on new connections (so that every nginx
	// worker may answer), until each instance has answered through it.
	lb := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: h.dial.DialContext}, Timeout: time.Second}
	seen := map[string]bool{}
	for {
		name, err := healthz(ctx, lb, top.URL())
		if err == nil {
			seen[name] = true
			if containsAll(seen, names) {
				return nil
			}
		}
		if !sleepCtx(ctx, 10*time.Millisecond) {
			var missing []string
			for n := range names {
				if !seen[n] {
					missing = append(missing, n)
				}
			}
			slices.Sort(missing)
			if err == nil {
				err = errors.New("200")
			}
			return fmt.Errorf("%w: the load balancer at %s does not route to %s yet (last answer: %w)",
				errNotReady, top.URL(), strings.Join(missing, ", "), err)
		}
	}
}

func containsAll(seen, want map[string]bool) bool {
	for n := range want {
		if !seen[n] {
			return false
		}
	}
	return true
}

// Healthz asks GET url/healthz once and returns nil on a 200. It goes
// through the same loopback-only guard as the load (see Config.AllowRemote).
func Healthz(ctx context.Context, url string, allowRemote bool) error {
	base, err := checkURL(url, allowRemote)
	if err != nil {
		return err
	}
	d := newDialer(DefaultTimeout, allowRemote)
	defer d.closeAll()
	_, err = healthz(ctx, &http.Client{Transport: d.transport(1)}, base)
	return err
}

// healthz asks GET base/healthz once and returns the name of the instance
// that answered 200.
func healthz(ctx context.Context, c *http.Client, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /healthz: %s", resp.Status)
	}
	return resp.Header.Get("X-Instance"), nil
}

// pickScenarios returns the named scenarios in the order of Scenarios(),
// or all of them.
func pickScenarios(names []string) ([]Scenario, error) {
	for _, n := range names {
		if _, err := LookupScenario(n); err != nil {
			return nil, err
		}
	}
	all := Scenarios()
	if len(names) == 0 {
		return all, nil
	}
	return slices.DeleteFunc(all, func(s Scenario) bool { return !slices.Contains(names, s.Name) }), nil
}

// stackConfig is the scenario's stack: the template with free loopback
// ports, the scenario's instances and flags.
func (s Scenario) stackConfig(cfg MatrixConfig) stack.Config {
	c := cfg.Stack
	c.LBAddr, c.RedisAddr, c.AppBasePort = "127.0.0.1:0", "127.0.0.1:0", 0
	c.Instances = s.Instances
	if c.Instances == 0 {
		c.Instances = stack.DefaultInstances
	}
	c.AppArgs = append(slices.Clone(cfg.Stack.AppArgs), s.AppArgs...)
	c.InstanceArgs = nil
	if len(s.InstanceArgs) > 0 {
		c.InstanceArgs = make(map[int][]string, len(s.InstanceArgs))
		for i, a := range s.InstanceArgs {
			c.InstanceArgs[i] = slices.Clone(a)
		}
	}
	c.RedisProxy, c.MasterProxies = s.RedisProxy, s.MasterProxies
	c.RequireReal = cfg.RequireReal || cfg.Stack.RequireReal
	if cfg.Stack.Dir != "" {
		c.Dir = filepath.Join(cfg.Stack.Dir, s.Name)
	}
	return c
}
