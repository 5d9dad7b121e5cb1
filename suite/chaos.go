package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// The fault suite (make chaos): what the safe locks do when parts of the
// stack fail under load, each fault a run (or a series) judged by the same
// three checks as every run (the books, the history, the critical
// sections) and by the fault's own figure.
//
//  1. kill:        SIGKILL the instance that holds the lock; it is restarted
//                  (fault_kill.go).
//  2. drain:       SIGTERM one instance the rolling-deploy way (out of the
//                  load balancer first): it finishes what it serves
//                  (fault_drain.go).
//  3. redis-stop:  Redis shut down mid-run and started again with its data
//                  (fault_redis.go); for the PostgreSQL rungs, PostgreSQL
//                  (postgres-stop, fault_postgres.go).
//  4. retry-trap:  Redis answers slower than the client's read timeout: with
//                  go-redis's default retries a sale script runs twice
//                  (fault_retry.go).
//  5. failover:    a primary dies before replicating a lock (package
//                  failover; fault_failover.go).
//  6. partition:   1, 2 or 3 of redlock's 5 masters cut off the network
//                  (fault_partition.go).
//  7. repeats:     faults 1, 2, 3 and 6 again and again at random moments
//                  (fault_repeats.go).
//  8. cluster:     on a Redis Cluster, the master of the item's slot
//                  SIGKILLed under load; its replica takes over
//                  (fault_cluster.go), once it streams to it.
//
// The library rungs run under the faults that strike their back end
// (chaos_libs.go). chaos_run.go runs a fault and tries again a run that
// measured nothing; chaos_report.go writes the table and the reports.

// ChaosConfig describes a fault suite run. Zero values take the defaults.
type ChaosConfig struct {
	// Faults to run, by number (1..8); default all.
	Faults []int
	// Locks are the rungs loaded under faults 1, 2, 3, 7 and 8: the lab's
	// safe rungs, and the library and PostgreSQL rungs (LibraryLocks,
	// PGLocks), each under the faults that strike its back end
	// (chaos_libs.go); default lua, fenced, fair, cohort and cohort-carry,
	// then every library, then the PostgreSQL rungs. Faults 4,
	// 5 and 6 use the locks they are about (atomic; lua and redlock;
	// redlock), 5 the libraries on the one Redis beside lua and 6 the
	// library over the masters beside redlock.
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
	Start func(ctx context.Context, cfg stack.Config) (Stack, error)
	// Lanes, when above 1, is how many faults run at once, each on
	// stacks of its own (the longest first); 0 or 1: one after the other.
	// Most of a fault's time is waiting (an instance restarted, a lease or
	// a partition waited out), on conditions, not on the clock.
	Lanes int

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
	Rows []bench.Row `json:"rows,omitempty"`
}

// The defaults of ChaosConfig's sizes.
const (
	defaultChaosRequests    = 1000
	defaultChaosConcurrency = 40
	defaultChaosStock       = 300
)

// The defaults of ChaosConfig's Repeats and Trials; cmd/bench shows them.
const (
	DefaultRepeats = 20
	DefaultTrials  = 20
)

// chaosLockTTL is the lease the fault stacks run with (the app's default):
// an orphaned lock is free again within it.
const chaosLockTTL = 2 * time.Second

// RunChaos runs the fault suite and returns its rows, in the faults'
// order, with the first error (and the rows finished before it; with
// Lanes, every lane's error, and no fault starts after one).
func RunChaos(ctx context.Context, cfg ChaosConfig) ([]ChaosRow, error) {
	if cfg.Lanes > 1 {
		return runChaosLanes(ctx, cfg)
	}
	c, err := newChaos(cfg)
	if err != nil {
		return nil, err
	}
	var rows []ChaosRow
	for _, f := range c.cfg.Faults {
		began := time.Now()
		got, err := c.fault(ctx, f)
		c.p.Note(fmt.Sprintf("fault %d: %d rows in %s", f, len(got), time.Since(began).Round(100*time.Millisecond)))
		rows = append(rows, got...)
		if err != nil {
			return rows, fmt.Errorf("bench: chaos fault %d: %w", f, err)
		}
	}
	return rows, nil
}

type chaos struct {
	cfg  ChaosConfig
	base bench.Config
	rnd  *rand.Rand
	p    *bench.Progress
}

func newChaos(cfg ChaosConfig) (*chaos, error) {
	if len(cfg.Faults) == 0 {
		cfg.Faults = []int{1, 2, 3, 4, 5, 6, 7, 8}
	}
	for _, f := range cfg.Faults {
		if f < 1 || f > 8 {
			return nil, fmt.Errorf("bench: chaos: no fault %d (there are 1 to 8)", f)
		}
	}
	if len(cfg.Locks) == 0 {
		cfg.Locks = append(append([]string{"lua", "fenced", "fair", "cohort", "cohort-carry"}, LibraryLocks()...), PGLocks()...)
	}
	for _, d := range []struct {
		v   *int
		def int
	}{
		{&cfg.Requests, defaultChaosRequests}, {&cfg.Concurrency, defaultChaosConcurrency},
		{&cfg.Stock, defaultChaosStock}, {&cfg.Repeats, DefaultRepeats}, {&cfg.Trials, DefaultTrials},
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
	base, err := bench.Config{
		URL: "http://127.0.0.1:1", Endpoints: []string{bench.EndpointSale},
		Requests: cfg.Requests, Concurrency: cfg.Concurrency, Stock: cfg.Stock, Timeout: cfg.Timeout,
		HistoryDir: cfg.HistoryDir,
	}.Normalize()
	if err != nil {
		return nil, err
	}
	return &chaos{cfg: cfg, base: base, rnd: rand.New(rand.NewPCG(cfg.Seed, 0)), p: bench.NewProgress(cfg.Progress)}, nil
}

// fault runs fault f, each in its own file.
func (c *chaos) fault(ctx context.Context, f int) ([]ChaosRow, error) {
	switch f {
	case 1:
		return c.kills(ctx)
	case 2:
		return c.perLock(ctx, 2, "drain", c.base, c.drain)
	case 3:
		rows, err := c.perLock(ctx, 3, "redis-stop", c.base, c.redisStop)
		if err != nil {
			return rows, err
		}
		pg, err := c.perLock(ctx, 3, "postgres-stop", c.postgresBase(), c.postgresStop)
		return append(rows, pg...), err
	case 4:
		return c.retryTrap(ctx)
	case 5:
		return c.failover(ctx)
	case 6:
		return c.partitions(ctx)
	case 8:
		return c.clusterFailover(ctx)
	default:
		return c.repeats(ctx)
	}
}
