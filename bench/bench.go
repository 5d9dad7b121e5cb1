// Package bench replays the classic `ab -n 5000 -c 100` test against each
// lock strategy through the load balancer, reads the counters back and
// judges every run: SAFE, OVERSOLD, LOST UPDATES, OVERLAP or DEADLOCK.
//
// Each run is POST /reset?stock=N, then the load, then GET /stock. The load
// is a closed loop driven by vegeta as a library: Concurrency workers, each
// sending its next request as soon as the previous one is answered, until
// exactly Requests requests have been sent to POST /sale?lock=L or
// POST /testLock?lock=L (POST, not ab's GET: see loadMethod). Verdicts are
// computed only from what the app answered and what GET /stock reads back
// afterwards (see Judge); nothing is assumed about a strategy. The answers
// are also checked as a history (package bench/history) and against the
// critical sections the instances report. The runs hold the stack's run
// guard (package guard) from before their first reset to their last
// read-back: no other run, nor anyone's /reset, resets the stock under
// them, and a stack another run holds is an error naming it.
//
// A Shape shapes a run further: extra query parameters on every request or
// on a few armed hits, chosen by hit index (fault=crash on the hits at 10%,
// 30%, 50% and 70% of the stock, say), hooks fired at a given hit (stop two
// Redlock masters), and a stall bound: when nothing gets through the lock
// for longer than that after the first fault, the run is stopped and
// judged DEADLOCK. A Session runs shaped runs one after another against a
// running stack (a Topology), each only once the stack is whole.
//
// The library knows nothing of how stacks start: package suite starts
// them and runs the scenario matrix and the fault suite through sessions.
// cmd/bench and `make demo` only parse flags and call Compare: Run, then
// the writers (WriteTable, WriteReports).
package bench

import (
	"context"
	"fmt"
	"strings"
)

// Run benchmarks every lock in cfg.Locks (default: all of GET /strategies)
// on every endpoint, one run after the other, in that order. A lock the app
// lists as unavailable (its server is missing) is not run: by default its
// rows say NOT RUN and why; named in cfg.Locks, it is an error. Run stops
// at the first failed run and returns the rows finished so far with the
// error.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil, err
	}
	h := newHarness(cfg)
	defer h.close()
	if err := h.hold(ctx); err != nil {
		return nil, err
	}

	offered, err := h.strategies(ctx)
	if err != nil {
		return nil, err
	}
	locks := cfg.Locks
	if len(locks) == 0 {
		locks = offered
	} else if err := checkLocks(locks, offered); err != nil {
		return nil, err
	} else if err := h.checkServed(locks); err != nil {
		return nil, err
	}

	p := NewProgress(cfg.Progress)
	if p != nil && cfg.Brief {
		p.oneLine = true
		defer p.clear()
	}
	for _, lock := range locks {
		for _, ep := range cfg.Endpoints {
			p.Fit(lock, ep)
		}
	}
	var keys []string
	for _, lock := range locks {
		if h.unavailable[lock] == "" {
			for _, ep := range cfg.Endpoints {
				keys = append(keys, lock+"/"+ep)
			}
		}
	}
	p.plan(keys, tookBefore(cfg.Previous))
	rows := make([]Row, 0, len(locks)*len(cfg.Endpoints))
	for _, lock := range locks {
		if why := h.unavailable[lock]; why != "" {
			if !cfg.Brief {
				p.Note(fmt.Sprintf("not run: %s: %s", lock, why))
			}
			for _, ep := range cfg.Endpoints {
				ep, _ := normalizeEndpoint(ep)
				rows = append(rows, Row{Scenario: ScenarioNormal, Lock: lock, Endpoint: ep, Verdict: VerdictNotRun, NotRun: why})
			}
			continue
		}
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
// counters back and judges the run. It is the unit Run repeats, for a
// caller that picks its lock and endpoint itself (the tests drive the
// library through it).
func RunOne(ctx context.Context, cfg Config, lock, endpoint string) (Row, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return Row{}, err
	}
	h := newHarness(cfg)
	defer h.close()
	if err := h.hold(ctx); err != nil {
		return Row{}, err
	}
	return h.runOne(ctx, lock, endpoint, NewProgress(cfg.Progress), nil)
}

// checkServed refuses locks the app cannot serve here.
func (h *harness) checkServed(locks []string) error {
	for _, l := range locks {
		if why := h.unavailable[l]; why != "" {
			return fmt.Errorf("bench: the app cannot serve lock %q here: %s", l, why)
		}
	}
	return nil
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
