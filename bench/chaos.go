package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/failover"
	"github.com/lockladder/lockladder/internal/report"
	"github.com/lockladder/lockladder/stack"
)

// The fault suite (make chaos): what the safe locks do when parts of the
// stack fail under load, each fault a run (or a series) judged by the same
// three checks as every run (the books, the history, the critical
// sections) and by the fault's own figure.
//
//  1. kill:        SIGKILL the instance that holds the lock; it is restarted.
//  2. drain:       SIGTERM one instance the rolling-deploy way (out of the
//                  load balancer first): it finishes what it serves.
//  3. redis-stop:  Redis shut down mid-run and started again with its data.
//  4. retry-trap:  Redis answers slower than the client's read timeout: with
//                  go-redis's default retries a sale script runs twice.
//  5. failover:    a primary dies before replicating a lock (package failover).
//  6. partition:   1, 2 or 3 of redlock's 5 masters cut off the network.
//  7. repeats:     faults 1, 2, 3 and 6 again and again at random moments.

// ChaosConfig describes a fault suite run. Zero values take the defaults.
type ChaosConfig struct {
	// Faults to run, by number (1..7); default all.
	Faults []int
	// Locks are the safe rungs loaded under faults 1, 2, 3 and 7; default
	// lua, fenced and fair. Faults 4 and 6 use the lock they are about
	// (atomic and redlock).
	Locks []string
	// Requests, Concurrency and Stock of each run; default 1000, 40, 300.
	Requests, Concurrency, Stock int
	// Repeats is how many times fault 7 runs each schedule; default 20.
	Repeats int
	// Trials is how many failovers fault 5 runs per lock; default 20.
	Trials int
	// Seed of fault 7's random timing; 0 picks one (it is in the report).
	Seed uint64
	// Timeout bounds each request; default 30s.
	Timeout time.Duration

	// Stack is the template of each fault's stack (binary, nginx.conf,
	// modes, log), as in MatrixConfig; addresses are always free ports.
	Stack       stack.Config
	RequireReal bool
	// Start starts a stack; default stack.Start.
	Start func(ctx context.Context, cfg stack.Config) (Topology, error)

	// Progress receives a line per run (nil = none).
	Progress io.Writer
	// HistoryDir receives the HTML view of each illegal history.
	HistoryDir string
}

// ChaosRow is one line of the fault suite's table.
type ChaosRow struct {
	Fault int    `json:"fault"`
	Name  string `json:"name"`
	Lock  string `json:"lock"`
	// Runs is how many runs the row sums (fault 7: the repeats; fault 5:
	// the trials).
	Runs     int `json:"runs"`
	Requests int `json:"requests"`
	OK       int `json:"ok"`
	// Errors counts the failed requests by class: "503 lock" (the lock was
	// not had: nothing changed), "503 redis" (Redis failed: maybe applied),
	// "502", "504", "5xx", "conn" (no answer at all), "4xx".
	Errors map[string]int `json:"errors"`
	// Violations counts what the three checks found: each overlapping
	// critical section, each illegal history, each run whose books do not
	// balance.
	Violations int `json:"violations"`
	// RecoveryMs is the fault's recovery time (what Recovery says), -1
	// when it has none.
	RecoveryMs float64 `json:"recovery_ms"`
	Recovery   string  `json:"recovery,omitempty"`
	// NotRun counts the runs that measured nothing even when tried again
	// (the fault could not be applied as planned, the stack was not whole
	// in time, or most answers were the load balancer's 502s: instances
	// down), and Why says why; they are not evidence of anything, and a
	// row with any is not a pass. Retried counts the runs tried again.
	NotRun  int      `json:"not_run,omitempty"`
	Why     []string `json:"why_not_run,omitempty"`
	Retried int      `json:"retried,omitempty"`
	// Figure is the fault's own measurement, Want what the issue asks of
	// it, Pass whether the figure meets it (and nothing was violated where
	// safety is the point).
	Figure string `json:"figure"`
	Want   string `json:"want"`
	Pass   bool   `json:"pass"`
	// Rows are the runs behind the line.
	Rows []Row `json:"rows,omitempty"`
}

// Chaos defaults.
const (
	DefaultChaosRequests    = 1000
	DefaultChaosConcurrency = 40
	DefaultChaosStock       = 300
	DefaultRepeats          = 20
	DefaultTrials           = 20
)

// chaosLockTTL is the lease the fault stacks run with (the app's default):
// an orphaned lock is free again within it.
const chaosLockTTL = 2 * time.Second

// RunChaos runs the fault suite and returns its rows, with the first error
// (and the rows finished before it).
func RunChaos(ctx context.Context, cfg ChaosConfig) ([]ChaosRow, error) {
	c, err := newChaos(cfg)
	if err != nil {
		return nil, err
	}
	var rows []ChaosRow
	for _, f := range c.cfg.Faults {
		began := time.Now()
		got, err := c.fault(ctx, f)
		c.p.note(fmt.Sprintf("fault %d: %d rows in %s", f, len(got), time.Since(began).Round(100*time.Millisecond)))
		rows = append(rows, got...)
		if err != nil {
			return rows, fmt.Errorf("bench: chaos fault %d: %w", f, err)
		}
	}
	return rows, nil
}

type chaos struct {
	cfg  ChaosConfig
	base Config
	rnd  *rand.Rand
	p    *progress
}

func newChaos(cfg ChaosConfig) (*chaos, error) {
	if len(cfg.Faults) == 0 {
		cfg.Faults = []int{1, 2, 3, 4, 5, 6, 7}
	}
	for _, f := range cfg.Faults {
		if f < 1 || f > 7 {
			return nil, fmt.Errorf("bench: chaos: no fault %d (there are 1 to 7)", f)
		}
	}
	if len(cfg.Locks) == 0 {
		cfg.Locks = []string{"lua", "fenced", "fair"}
	}
	for _, d := range []struct {
		v   *int
		def int
	}{
		{&cfg.Requests, DefaultChaosRequests}, {&cfg.Concurrency, DefaultChaosConcurrency},
		{&cfg.Stock, DefaultChaosStock}, {&cfg.Repeats, DefaultRepeats}, {&cfg.Trials, DefaultTrials},
	} {
		if *d.v < 0 {
			return nil, errors.New("bench: chaos: sizes must not be negative")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if cfg.Start == nil {
		cfg.Start = startStack
	}
	base, err := Config{
		URL: "http://127.0.0.1:1", Endpoints: []string{EndpointSale},
		Requests: cfg.Requests, Concurrency: cfg.Concurrency, Stock: cfg.Stock, Timeout: cfg.Timeout,
		HistoryDir: cfg.HistoryDir,
	}.normalize()
	if err != nil {
		return nil, err
	}
	return &chaos{cfg: cfg, base: base, rnd: rand.New(rand.NewPCG(cfg.Seed, 0)), p: newProgress(cfg.Progress)}, nil
}

// The stack controls the faults need; *stack.Stack has them all.
type (
	instanceControl interface {
		Signal(i int, sig syscall.Signal) (int, error)
		Drain(ctx context.Context, i int) (stack.DrainReport, error)
		Instances() int
	}
	redisControl interface {
		StopRedis(ctx context.Context) error
		StartRedis(ctx context.Context) error
		RedisProxy() *stack.FaultProxy
	}
	partitionControl interface {
		MasterProxy(i int) *stack.FaultProxy
	}
)

var (
	_ instanceControl  = (*stack.Stack)(nil)
	_ redisControl     = (*stack.Stack)(nil)
	_ partitionControl = (*stack.Stack)(nil)
)

func (c *chaos) fault(ctx context.Context, f int) ([]ChaosRow, error) {
	switch f {
	case 1:
		return c.kills(ctx)
	case 2:
		return c.perLock(ctx, 2, "drain", c.drain)
	case 3:
		return c.perLock(ctx, 3, "redis-stop", c.redisStop)
	case 4:
		return c.retryTrap(ctx)
	case 5:
		return c.failover(ctx)
	case 6:
		return c.partitions(ctx)
	default:
		return c.repeats(ctx)
	}
}

// faultRun is one fault's scenario and how to read its figure off the run.
type faultRun struct {
	sc     Scenario
	figure func(r Row) ChaosRow // Fault, Name, Lock, counts and checks are filled in by the caller
}

// perLock runs a fault once for each of the safe locks, on one stack.
func (c *chaos) perLock(ctx context.Context, f int, name string, mk func(lock string, at float64, inst int) faultRun) ([]ChaosRow, error) {
	top, err := c.start(ctx, mk(c.cfg.Locks[0], 0.3, 1).sc)
	if err != nil {
		return nil, err
	}
	defer top.Stop()
	var rows []ChaosRow
	for _, lock := range c.cfg.Locks {
		row, err := c.once(ctx, f, name, top, lock, c.base, func() faultRun { return mk(lock, 0.3, 1) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// once is a row of one measured run of mk's fault (see measured), or a
// row that says why none could be measured.
func (c *chaos) once(ctx context.Context, f int, name string, top Topology, lock string, base Config, mk func() faultRun) (ChaosRow, error) {
	r, fr, m, err := c.measured(ctx, top, lock, base, mk)
	if err != nil {
		return ChaosRow{}, err
	}
	if m.why != "" {
		return ChaosRow{Fault: f, Name: name, Lock: lock, NotRun: 1, Why: []string{m.why}, Retried: m.retried,
			Errors: map[string]int{}, RecoveryMs: -1, Figure: "not run: " + m.why, Want: "a run that measures the fault"}, nil
	}
	row := c.line(f, name, r, fr.figure(r))
	row.Retried = m.retried
	return row, nil
}

// attempts is how many times a run that measured nothing is tried.
const attempts = 3

// measurement says how getting a run went: how many runs were tried
// again, and why none measured anything ("" when the last one did).
type measurement struct {
	retried int
	why     string
}

// measured runs the fault mk makes (a fresh one each try) until a run
// measures something: a run whose fault could not be applied as planned
// (errNotApplied), whose stack was not whole again in time (errNotReady),
// or whose answers were mostly the load balancer's 502/504 (instances down:
// it says nothing about the lock) is tried again, up to attempts times in
// all. Other errors end the suite: they are the lab's bugs.
func (c *chaos) measured(ctx context.Context, top Topology, lock string, base Config, mk func() faultRun) (Row, faultRun, measurement, error) {
	var m measurement
	for try := range attempts {
		if try > 0 {
			m.retried++
		}
		fr := mk()
		r, err := c.run(ctx, fr.sc, top, lock, base)
		switch {
		case errors.Is(err, errNotApplied) || errors.Is(err, errNotReady):
			m.why = err.Error()
			c.p.note(fmt.Sprintf("%s/%s: measured nothing (%v); trying again", fr.sc.Name, lock, err))
			continue
		case err != nil:
			return Row{}, fr, m, err
		}
		if lb := lbFailures(r); lb*2 > r.Requests {
			m.why = fmt.Sprintf("%d of %d answers were the load balancer's 502/504 or no answer: instances were down, the run says nothing about the lock", lb, r.Requests)
			c.p.note(fmt.Sprintf("%s/%s: measured nothing (%s); trying again", fr.sc.Name, lock, m.why))
			continue
		}
		m.why = ""
		return r, fr, m, nil
	}
	return Row{}, faultRun{}, m, nil
}

// lbFailures counts the requests the load balancer answered for a missing
// instance (502, 504) or that got no answer at all.
func lbFailures(r Row) int {
	n := 0
	for _, op := range r.ops {
		if op.Code == 0 || op.Code == 502 || op.Code == 504 {
			n++
		}
	}
	return n
}

// start starts the fault's stack.
func (c *chaos) start(ctx context.Context, sc Scenario) (Topology, error) {
	sCfg := sc.stackConfig(MatrixConfig{Stack: c.cfg.Stack, RequireReal: c.cfg.RequireReal})
	sCfg.StableAfter = time.Second // instances are killed on purpose, seconds apart
	top, err := c.cfg.Start(ctx, sCfg)
	if err != nil {
		return nil, fmt.Errorf("starting the stack for %s: %w", sc.Name, err)
	}
	return top, nil
}

// run loads lock on top under sc and returns the judged row.
func (c *chaos) run(ctx context.Context, sc Scenario, top Topology, lock string, base Config) (Row, error) {
	rows, _, err := runScenario(ctx, sc, top, base, []matrixPair{{lock, EndpointSale, ""}}, c.p)
	if err != nil {
		return Row{}, err
	}
	if len(rows) != 1 {
		return Row{}, fmt.Errorf("%s/%s: the app does not offer the lock", sc.Name, lock)
	}
	return rows[0], nil
}

// line fills a chaos row from one run and the fault's figure.
func (c *chaos) line(f int, name string, r Row, fig ChaosRow) ChaosRow {
	fig.Fault, fig.Name, fig.Lock, fig.Runs = f, name, r.Lock, 1
	fig.Requests, fig.OK, fig.Errors = r.Requests, r.OK, errorClasses(r.ops)
	fig.Violations = violations(r)
	fig.Rows = []Row{r}
	return fig
}

// violations counts what the run's checks found.
func violations(r Row) int {
	n := r.Overlaps
	if r.Linearizable == string(history.Illegal) {
		n++
	}
	if !saleBalanced(&r) {
		n++
	}
	return n
}

// Fault 1's kill under load: the whole test of the articles through the
// load balancer, one of three instances SIGKILLed half way.
const (
	killLoadRequests    = 5000
	killLoadConcurrency = 100
	// killLoadMaxLost is how many answers of 502/504 that kill may cost:
	// the requests in flight on the victim, and the few the load
	// balancer sends it before it marks it failed.
	killLoadMaxLost = 50
)

// kills is fault 1: the holder killed, for each safe lock, and then any
// instance killed under the full load.
func (c *chaos) kills(ctx context.Context) ([]ChaosRow, error) {
	top, err := c.start(ctx, c.kill(c.cfg.Locks[0], 0.3, 1).sc)
	if err != nil {
		return nil, err
	}
	defer top.Stop()
	// Every request finds stock, so the holder's own request reaches its
	// business (where work= holds the lock) whenever it gets the lock.
	base := c.base
	base.Stock = base.Requests
	var rows []ChaosRow
	for _, lock := range c.cfg.Locks {
		row, err := c.once(ctx, 1, "kill", top, lock, base, func() faultRun { return c.kill(lock, 0.3, 1) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	load := c.base
	load.Requests, load.Concurrency, load.Stock = killLoadRequests, killLoadConcurrency, killLoadRequests
	lock := c.cfg.Locks[0]
	row, err := c.once(ctx, 1, "kill under load", top, lock, load, func() faultRun { return c.killUnderLoad(lock, 0.5, 2) })
	return append(rows, row), err
}

// killUnderLoad: SIGKILL instance inst at fraction at of a full run,
// holding the lock or not.
func (c *chaos) killUnderLoad(_ string, at float64, inst int) faultRun {
	var victim string
	sc := Scenario{
		Name: "kill-load", About: "SIGKILL one of three instances half way through 5000 sales",
		Hooks: []Hook{{At: at, About: "SIGKILL an instance", Do: func(ctx context.Context, t Topology) error {
			ic, ok := t.(instanceControl)
			if !ok {
				return errors.New("the stack cannot signal its instances")
			}
			i := inst % ic.Instances()
			victim = fmt.Sprintf("app%d", i+1)
			_, err := ic.Signal(i, syscall.SIGKILL)
			return err
		}}},
	}
	return faultRun{sc: sc, figure: func(r Row) ChaosRow {
		lost := 0
		for _, op := range r.ops {
			if op.Code == 502 || op.Code == 504 {
				lost++
			}
		}
		return ChaosRow{
			RecoveryMs: -1,
			Figure: fmt.Sprintf("killed %s: 502/504 ×%d of %d sales; oversold %d",
				victim, lost, r.Requests, r.Oversold),
			Want: fmt.Sprintf("at most %d answers of 502/504, nothing oversold", killLoadMaxLost),
			Pass: lost <= killLoadMaxLost && violations(r) == 0,
		}
	}}
}

// kill: SIGKILL an instance while it holds the lock, mid-run. To be sure
// it holds it, one request of its own is sent to that instance directly,
// with a business of a second (work=1s, under the 2s lease); the kill comes
// once the instance reports that request inside its critical section. It
// dies before its write, so it sells nothing, and the lock is orphaned
// until its lease runs out.
func (c *chaos) kill(lock string, at float64, inst int) faultRun {
	var (
		killed time.Time // set by the hook, read once the run (and its hooks) is over
		victim string
	)
	sc := Scenario{
		Name: "kill", About: "SIGKILL the instance holding the lock; the supervisor restarts it",
		AppArgs: []string{"-faults"},
		Hooks: []Hook{{At: at, About: "SIGKILL the holder", Do: func(ctx context.Context, t Topology) error {
			ic, ok := t.(instanceControl)
			if !ok {
				return errors.New("the stack cannot signal its instances")
			}
			i := inst % ic.Instances()
			name, err := holdAt(ctx, t.InstanceURLs()[i], lock)
			if err != nil {
				return err
			}
			if _, err := ic.Signal(i, syscall.SIGKILL); err != nil {
				return err
			}
			killed, victim = time.Now(), name
			return nil
		}}},
	}
	return faultRun{sc: sc, figure: func(r Row) ChaosRow {
		rec, ok := firstProgress(r, killed)
		row := ChaosRow{
			Recovery: "SIGKILL to the lock had again (its lease ran out)",
			Want:     fmt.Sprintf("no violation; the orphaned lock free within its %s lease", chaosLockTTL),
			Figure:   fmt.Sprintf("killed %s while it held the lock", victim),
		}
		row.RecoveryMs = -1
		if ok {
			row.RecoveryMs = report.Ms(rec)
		} else {
			row.Figure += "; no sale after it"
		}
		row.Pass = ok && rec <= chaosLockTTL+500*time.Millisecond && violations(r) == 0
		return row
	}}
}

// killAny: SIGKILL instance inst at a moment of the load, holding the
// lock or not (fault 7's schedule).
func (c *chaos) killAny(_ string, at float64, inst int) faultRun {
	var killed time.Time
	sc := Scenario{
		Name: "kill-any", About: "SIGKILL an instance at a random moment",
		AppArgs: []string{"-lock-ttl", "500ms"},
		Hooks: []Hook{{At: at, About: "SIGKILL an instance", Do: func(ctx context.Context, t Topology) error {
			ic, ok := t.(instanceControl)
			if !ok {
				return errors.New("the stack cannot signal its instances")
			}
			_, err := ic.Signal(inst%ic.Instances(), syscall.SIGKILL)
			killed = time.Now()
			return err
		}}},
	}
	return faultRun{sc: sc, figure: func(r Row) ChaosRow {
		row := ChaosRow{RecoveryMs: -1, Recovery: "SIGKILL to the next sale through the lock", Want: "no violation"}
		if rec, ok := firstProgress(r, killed); ok {
			row.RecoveryMs = report.Ms(rec)
		}
		row.Pass = violations(r) == 0
		return row
	}}
}

// drain: take one instance out the graceful way.
func (c *chaos) drain(_ string, at float64, inst int) faultRun {
	var rep stack.DrainReport
	sc := Scenario{
		Name: "drain", About: "SIGTERM one instance after taking it out of the load balancer",
		Hooks: []Hook{{At: at, About: "drain an instance", Do: func(ctx context.Context, t Topology) error {
			ic, ok := t.(instanceControl)
			if !ok {
				return errors.New("the stack cannot drain its instances")
			}
			var err error
			rep, err = ic.Drain(ctx, inst%ic.Instances())
			return err
		}}},
	}
	return faultRun{sc: sc, figure: func(r Row) ChaosRow {
		fromIt, all := 0, 0
		for _, op := range r.ops {
			if op.Code >= 500 {
				all++
				if op.Instance == rep.Name {
					fromIt++
				}
			}
		}
		exact := r.Sold == int64(r.OK) && r.Sold == r.Initial-r.Remaining
		return ChaosRow{
			RecoveryMs: report.Ms(rep.Drain), Recovery: "SIGTERM to exit, its requests finished",
			Figure: fmt.Sprintf("5xx from %s: %d (5xx in all: %d); sold %d, ok %d; out of the LB in %s",
				rep.Name, fromIt, all, r.Sold, r.OK, rep.OutOfLB.Round(time.Millisecond)),
			Want: "zero 5xx from the drained instance; sold == ok",
			Pass: fromIt == 0 && exact && violations(r) == 0,
		}
	}}
}

// redisStop: Redis shut down mid-run and started again.
func (c *chaos) redisStop(_ string, at float64, _ int) faultRun {
	var down, back, healthy time.Time
	sc := Scenario{
		Name: "redis-stop", About: "Redis shut down mid-run (SHUTDOWN SAVE) and started again with its data",
		Hooks: []Hook{{At: at, About: "stop and start Redis", Do: func(ctx context.Context, t Topology) error {
			rc, ok := t.(redisControl)
			if !ok {
				return errors.New("the stack cannot stop its Redis")
			}
			down = time.Now()
			if err := rc.StopRedis(ctx); err != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond) // down for a while, not just a blink
			if err := rc.StartRedis(ctx); err != nil {
				return err
			}
			back = time.Now()
			if err := untilHealthy(ctx, t, 10*time.Second); err != nil {
				return err
			}
			healthy = time.Now()
			return nil
		}}},
	}
	return faultRun{sc: sc, figure: func(r Row) ChaosRow {
		var lat []time.Duration
		for _, op := range r.ops {
			if op.Code == 503 {
				lat = append(lat, time.Duration(op.Return-op.Call))
			}
		}
		p := percentile(lat, 0.99)
		balanced := violations(r) == 0
		return ChaosRow{
			RecoveryMs: report.Ms(healthy.Sub(back)), Recovery: "Redis back to every instance healthy",
			Figure: fmt.Sprintf("503 ×%d, p99 %s; Redis down %s; sold %d = stock gone %d",
				len(lat), p.Round(100*time.Microsecond), back.Sub(down).Round(time.Millisecond), r.Sold, r.Initial-r.Remaining),
			Want: "503s fast (p99 < 1s); stock and sold unchanged by them",
			Pass: len(lat) > 0 && p < time.Second && balanced,
		}
	}}
}

// retryTrap: Redis slower than the client's read timeout, in pulses, with
// go-redis's default retries and with the app's setting.
func (c *chaos) retryTrap(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	for _, retries := range []string{"3", "-1"} {
		sc := Scenario{
			Name: "retry-trap", About: "Redis replies 150ms late in pulses; the client's read timeout is 100ms",
			RedisProxy: true,
			AppArgs:    []string{"-redis-timeout", "100ms", "-redis-retries", retries},
			Hooks: []Hook{{At: 0.05, About: "slow Redis in pulses", Do: func(ctx context.Context, t Topology) error {
				rc, ok := t.(redisControl)
				if !ok || rc.RedisProxy() == nil {
					return errors.New("the stack has no proxy in front of Redis")
				}
				px := rc.RedisProxy()
				defer px.SetLatency(0)
				for range 10 {
					px.SetLatency(150 * time.Millisecond)
					if !sleepCtx(ctx, 40*time.Millisecond) {
						return nil
					}
					px.SetLatency(0)
					if !sleepCtx(ctx, 160*time.Millisecond) {
						return nil
					}
				}
				return nil
			}}},
		}
		top, err := c.start(ctx, sc)
		if err != nil {
			return rows, err
		}
		// Every request must find stock, or a sale run twice could hide
		// behind a sold out.
		base := c.base
		base.Requests, base.Stock, base.Concurrency = 3000, 3000, 20
		row, err := c.once(ctx, 4, "retry-trap", top, "atomic", base, func() faultRun {
			return faultRun{sc: sc, figure: func(r Row) ChaosRow {
				gone, maybe := r.Initial-r.Remaining, possiblyApplied(&r)
				fig := ChaosRow{RecoveryMs: -1, Figure: fmt.Sprintf("-redis-retries %s: sold %d vs ok %d + possibly applied %d", retries, gone, r.OK, maybe)}
				if retries == "3" {
					fig.Want = "shown: sold > ok + possibly applied (a script run twice)"
					fig.Pass = gone > int64(r.OK)+maybe
				} else {
					fig.Want = "sold <= ok + possibly applied, never more"
					fig.Pass = gone <= int64(r.OK)+maybe && violations(r) == 0
				}
				return fig
			}}
		})
		top.Stop()
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// failover: fault 5, from package failover.
func (c *chaos) failover(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	for _, run := range []func(context.Context, int, io.Writer) (failover.Result, error){failover.SingleInstance, failover.Redlock} {
		c.p.note(fmt.Sprintf("failover: %d trials", c.cfg.Trials))
		res, err := run(ctx, c.cfg.Trials, nil)
		if err != nil {
			return rows, err
		}
		row := ChaosRow{
			Fault: 5, Name: "failover", Lock: res.Lock, Runs: res.Trials, Errors: map[string]int{},
			Violations: res.DoubleGrants, RecoveryMs: report.Ms(res.Failover),
			Figure: fmt.Sprintf("double grants %d of %d", res.DoubleGrants, res.Trials),
		}
		if res.Lock == "redlock" {
			row.Recovery = "SIGKILL to the master answering again, empty (median)"
			row.Want = "no double grant"
			row.Pass = res.DoubleGrants == 0 && res.Trials == c.cfg.Trials
		} else {
			row.Recovery = "SIGKILL to the replica promoted (median)"
			row.Want = "shown: double grants (replication is asynchronous)"
			row.Pass = res.DoubleGrants > 0 && res.Trials == c.cfg.Trials
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// partitions: cut 1, 2 then 3 of redlock's 5 masters off the network.
func (c *chaos) partitions(ctx context.Context) ([]ChaosRow, error) {
	var rows []ChaosRow
	top, err := c.start(ctx, c.partition(1)("redlock", 0.3, 0).sc)
	if err != nil {
		return nil, err
	}
	defer top.Stop()
	for k := 1; k <= 3; k++ {
		row, err := c.once(ctx, 6, fmt.Sprintf("partition %d/5", k), top, "redlock", c.redlockBase(),
			func() faultRun { return c.partition(k)("redlock", 0.3, 0) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// redlockBase is the size of a redlock run: it is slow under contention.
func (c *chaos) redlockBase() Config {
	b := c.base
	b.Requests, b.Concurrency, b.Stock = min(b.Requests, 150), min(b.Concurrency, 20), min(b.Stock, 150)
	return b
}

// partitionWait is how long a request waits for redlock under a partition:
// a request that cannot reach a majority fails within it.
const partitionWait = 500 * time.Millisecond

// partition cuts the first k masters off at the run's moment at, and heals
// them after it.
func (c *chaos) partition(k int) func(lock string, at float64, inst int) faultRun {
	return func(_ string, at float64, _ int) faultRun {
		var cut time.Time
		sc := Scenario{
			Name: "partition", About: fmt.Sprintf("%d of 5 Redlock masters cut off the network", k),
			MasterProxies: true,
			AppArgs:       []string{"-lock-wait", partitionWait.String()},
			Hooks: []Hook{{At: at, About: fmt.Sprintf("cut %d masters", k),
				Do: func(ctx context.Context, t Topology) error {
					pc, ok := t.(partitionControl)
					if !ok {
						return errors.New("the stack has no proxies in front of its masters")
					}
					for i := range k {
						px := pc.MasterProxy(i)
						if px == nil {
							return fmt.Errorf("no proxy in front of master %d", i)
						}
						px.Cut()
					}
					cut = time.Now()
					return nil
				},
				Undo: func(ctx context.Context, t Topology) error {
					pc, ok := t.(partitionControl)
					if !ok {
						return nil
					}
					for i := range 5 {
						if px := pc.MasterProxy(i); px != nil {
							px.Heal()
						}
					}
					return nil
				}}},
		}
		return faultRun{sc: sc, figure: func(r Row) ChaosRow {
			after := int64(cut.Sub(r.began))
			okAfter := 0
			var lat []time.Duration
			for _, op := range r.ops {
				if op.Call < after {
					continue
				}
				switch op.Code {
				case 200:
					okAfter++
				case 503:
					lat = append(lat, time.Duration(op.Return-op.Call))
				}
			}
			p := percentile(lat, 0.99)
			row := ChaosRow{RecoveryMs: -1,
				Figure: fmt.Sprintf("after the cut: %d sold, %d 503s (p99 %s)", okAfter, len(lat), p.Round(time.Millisecond))}
			if k <= 2 {
				row.Want = "still safe and selling"
				row.Pass = okAfter > 0 && violations(r) == 0
			} else {
				row.Want = fmt.Sprintf("503s within the %s wait (+0.5s), nothing oversold", partitionWait)
				row.Pass = len(lat) > 0 && p < partitionWait+500*time.Millisecond && violations(r) == 0
			}
			return row
		}}
	}
}

// repeats: faults 1 (any instance, holding the lock or not), 2, 3 and 6
// (2 of 5 cut) again and again, at random moments, against random
// instances, on the first two safe locks; a row per fault and lock sums
// them.
func (c *chaos) repeats(ctx context.Context) ([]ChaosRow, error) {
	type schedule struct {
		name  string
		locks []string
		mk    func(lock string, at float64, inst int) faultRun
		base  Config
	}
	small := c.base
	small.Requests, small.Stock, small.Concurrency = min(small.Requests, 400), min(small.Stock, 150), min(small.Concurrency, 20)
	rl := c.redlockBase()
	rl.Requests, rl.Stock, rl.Concurrency = min(rl.Requests, 24), min(rl.Stock, 24), min(rl.Concurrency, 4)
	// Two safe rungs, one without and one with fencing, keep the suite
	// within minutes; -locks chooses others.
	locks := c.cfg.Locks[:min(2, len(c.cfg.Locks))]
	scheds := []schedule{
		{"kill", locks, c.killAny, small},
		{"drain", locks, c.drain, small},
		{"redis-stop", locks, c.redisStop, small},
		{"partition 2/5", []string{"redlock"}, c.partition(2), rl},
	}
	var rows []ChaosRow
	for _, s := range scheds {
		top, err := c.start(ctx, s.mk(s.locks[0], 0.5, 0).sc)
		if err != nil {
			return rows, err
		}
		for _, lock := range s.locks {
			began := time.Now()
			sum := ChaosRow{Fault: 7, Name: "repeat " + s.name, Lock: lock, Errors: map[string]int{}, RecoveryMs: -1,
				Want: fmt.Sprintf("no violation in %d runs at random moments", c.cfg.Repeats)}
			failed := 0
			for range c.cfg.Repeats {
				// One fault at a time: measured waits for the stack to be
				// whole again (the last victim back, and routed to)
				// before each run.
				at, inst := 0.1+0.6*c.rnd.Float64(), c.rnd.IntN(3)
				r, fr, m, err := c.measured(ctx, top, lock, s.base, func() faultRun { return s.mk(lock, at, inst) })
				if err != nil {
					top.Stop()
					return rows, err
				}
				sum.Retried += m.retried
				if m.why != "" {
					sum.NotRun++
					sum.Why = append(sum.Why, m.why)
					continue
				}
				one := c.line(7, s.name, r, fr.figure(r))
				sum.Runs++
				sum.Requests += one.Requests
				sum.OK += one.OK
				sum.Violations += one.Violations
				for k, v := range one.Errors {
					sum.Errors[k] += v
				}
				if one.RecoveryMs > sum.RecoveryMs {
					sum.RecoveryMs, sum.Recovery = one.RecoveryMs, "the longest: "+one.Recovery
				}
				if !one.Pass {
					failed++
				}
				sum.Rows = append(sum.Rows, r)
			}
			sum.Figure = fmt.Sprintf("%d of %d runs met the fault's own figure", sum.Runs-failed, sum.Runs)
			if sum.NotRun > 0 {
				sum.Figure += fmt.Sprintf("; %d not run: %s", sum.NotRun, sum.Why[0])
			}
			sum.Pass = sum.Violations == 0 && sum.NotRun == 0
			c.p.note(fmt.Sprintf("repeat %s %s: %d runs in %s", s.name, lock, sum.Runs, time.Since(began).Round(100*time.Millisecond)))
			rows = append(rows, sum)
		}
		if err := top.Stop(); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// errNotApplied marks a fault that could not be applied as planned (the
// holder to kill never held the lock): the run measures nothing.
var errNotApplied = errors.New("fault not applied")

// holdWork is the business of the request that holds the lock for kill.
const holdWork = time.Second

// holdAt sends the instance at base a sale of its own under lock, with a
// business of holdWork, and returns the instance's name once its GET
// /sections shows that request inside the critical section (a section
// held for more than a tenth of it: the load's last a millisecond or so).
func holdAt(ctx context.Context, base, lock string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	// The request may lose the race for the lock to the load and answer
	// 503: then it is sent again.
	h := newHarness(Config{Timeout: 10 * time.Second})
	defer h.close()
	go func() {
		for ctx.Err() == nil {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost,
				base+"/sale?lock="+url.QueryEscape(lock)+"&work="+holdWork.String(), nil)
			if err != nil {
				return
			}
			resp, err := h.client.Do(req)
			if err != nil {
				return // killed, or the hold is over
			}
			resp.Body.Close()
		}
	}()
	probe := newHarness(Config{Timeout: time.Second})
	defer probe.close()
	for {
		var got struct {
			Instance string             `json:"instance"`
			Holding  []contract.Section `json:"holding"`
		}
		now := time.Now()
		if err := probe.callURL(ctx, "GET", base+"/sections?since="+strconv.FormatInt(now.UnixNano(), 10), &got); err == nil {
			for _, s := range got.Holding {
				if s.Lock == lock && now.Sub(time.Unix(0, s.Acquired)) > holdWork/10 {
					return got.Instance, nil
				}
			}
		}
		if !sleepCtx(ctx, 5*time.Millisecond) {
			return "", fmt.Errorf("%w: %s never held %s for its own request", errNotApplied, base, lock)
		}
	}
}

// untilHealthy waits until the load balancer and every instance answer
// GET /healthz with 200.
func untilHealthy(ctx context.Context, t Topology, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	h := newHarness(Config{Timeout: time.Second})
	defer h.close()
	return settle(ctx, h, t)
}

// firstProgress is how long after t the first sale got through the lock
// (a 200, or a 409 sold out, answered after t).
func firstProgress(r Row, t time.Time) (time.Duration, bool) {
	after := int64(t.Sub(r.began))
	first := int64(-1)
	for _, op := range r.ops {
		if (op.Outcome == history.Applied || op.Outcome == history.SoldOut) && op.Call >= after {
			if first < 0 || op.Return < first {
				first = op.Return
			}
		}
	}
	if first < 0 {
		return 0, false
	}
	return time.Duration(first - after), true
}

// errorClasses counts the failed requests by class (see ChaosRow.Errors).
func errorClasses(ops []history.Op) map[string]int {
	m := map[string]int{}
	for _, op := range ops {
		switch {
		case op.Code == 200 || op.Code == 409:
		case op.Code == 0:
			m["conn"]++
		case op.Code == 503 && op.Outcome == history.Rejected:
			m["503 lock"]++
		case op.Code == 503:
			m["503 redis"]++
		case op.Code == 502 || op.Code == 504:
			m[strconv.Itoa(op.Code)]++
		case op.Code >= 500:
			m["5xx"]++
		default:
			m["4xx"]++
		}
	}
	return m
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

var chaosColumns = []struct {
	head  string
	right bool
	cell  func(ChaosRow) string
}{
	{"#", true, func(r ChaosRow) string { return strconv.Itoa(r.Fault) }},
	{"fault", false, func(r ChaosRow) string { return r.Name }},
	{"lock", false, func(r ChaosRow) string { return r.Lock }},
	{"runs", true, func(r ChaosRow) string { return strconv.Itoa(r.Runs) }},
	{"requests", true, func(r ChaosRow) string { return strconv.Itoa(r.Requests) }},
	{"ok", true, func(r ChaosRow) string { return strconv.Itoa(r.OK) }},
	{"errors", false, func(r ChaosRow) string { return report.Counts(r.Errors) }},
	{"violations", true, func(r ChaosRow) string { return strconv.Itoa(r.Violations) }},
	{"recovery ms", true, func(r ChaosRow) string {
		if r.RecoveryMs < 0 {
			return "-"
		}
		return report.MsCell(r.RecoveryMs)
	}},
	{"figure", false, func(r ChaosRow) string { return r.Figure }},
	{"pass", false, func(r ChaosRow) string {
		if r.Pass {
			return "yes"
		}
		return "NO: want " + r.Want
	}},
}

// WriteChaosTable writes the fault suite's rows as an aligned table.
func WriteChaosTable(w io.Writer, rows []ChaosRow) error {
	lines := [][]string{make([]string, len(chaosColumns)), nil}
	for i, c := range chaosColumns {
		lines[0][i] = c.head
	}
	for _, r := range rows {
		line := make([]string, len(chaosColumns))
		for i, c := range chaosColumns {
			line[i] = c.cell(r)
		}
		lines = append(lines, line)
	}
	report.Aligned(w, lines, func(i int) bool { return chaosColumns[i].right })
	return nil
}

// WriteChaosMarkdown writes the rows as a Markdown table.
func WriteChaosMarkdown(w io.Writer, rows []ChaosRow) error {
	head := make([]string, len(chaosColumns))
	for i, c := range chaosColumns {
		head[i] = c.head
	}
	report.MarkdownHead(w, head, func(i int) bool { return chaosColumns[i].right })
	for _, r := range rows {
		cells := make([]string, len(chaosColumns))
		for i, c := range chaosColumns {
			cells[i] = report.MarkdownEscape(c.cell(r))
		}
		report.MarkdownRow(w, cells)
	}
	return nil
}

// ChaosLegend says what the table's columns mean.
const ChaosLegend = "errors by class: 503 lock = the lock not had in time or Redis down while taking it (nothing changed), " +
	"503 redis = Redis failed under the write (maybe applied), 502/504 = the load balancer got no answer, conn = no answer at all; " +
	"violations = overlapping critical sections + illegal histories (porcupine) + runs whose books do not balance; " +
	"recovery and figure: what each fault measures; pass: the figure meets what the issue asks of the fault."

// CompareChaos runs the fault suite, prints its table to w and writes
// dir/chaos-YYYYMMDD-HHMMSS.{json,md} and dir/chaos-latest.{json,md}.
func CompareChaos(ctx context.Context, cfg ChaosConfig, dir string, w io.Writer) ([]ChaosRow, error) {
	started := time.Now()
	if cfg.HistoryDir == "" {
		cfg.HistoryDir = dir
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(started.UnixNano())
	}
	rows, runErr := RunChaos(ctx, cfg)
	took := time.Since(started)
	if len(rows) == 0 {
		return nil, runErr
	}
	fmt.Fprintln(w)
	WriteChaosTable(w, rows)
	fmt.Fprintf(w, "\n%s\nseed %d; took %s\n", ChaosLegend, cfg.Seed, took.Round(time.Second))

	var js, md bytes.Buffer
	rep := struct {
		Started time.Time  `json:"started"`
		Host    string     `json:"host"`
		Seed    uint64     `json:"seed"`
		TookMs  float64    `json:"took_ms"`
		Rows    []ChaosRow `json:"rows"`
	}{started.UTC(), HostInfo(), cfg.Seed, report.Ms(took), rows}
	if err := report.JSON(&js, rep); err != nil {
		return rows, err
	}
	fmt.Fprintf(&md, "# Lock ladder fault suite, %s\n\n- host: %s\n- seed: %d, took %s\n\n",
		started.UTC().Format("2006-01-02 15:04:05 MST"), HostInfo(), cfg.Seed, took.Round(time.Second))
	WriteChaosMarkdown(&md, rows)
	fmt.Fprintf(&md, "\n%s\n", ChaosLegend)
	jsonPath, mdPath, err := report.WriteFiles(dir, "chaos-"+started.Format("20060102-150405"), "chaos-latest", js.Bytes(), md.Bytes())
	if err != nil {
		return rows, err
	}
	fmt.Fprintf(w, "\nreports: %s\n         %s\n", jsonPath, mdPath)
	return rows, runErr
}
