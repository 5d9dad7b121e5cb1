package bench

import (
	"context"
	"slices"
	"time"
)

// Session runs one shaped run after another against a running stack, each
// started, and read back, only once the stack is whole. Package suite runs
// its scenarios and faults through sessions.
type Session struct {
	h       *harness
	top     Topology
	p       *Progress
	offered []string
	calm    time.Time // the load balancer skips no instance after this (see Run)
}

// lbFailTimeout is how long the load balancer skips an instance whose
// connection failed: nginx.conf's fail_timeout, the built-in proxy's
// failTimeout.
const lbFailTimeout = time.Second

// Open readies runs of cfg against top: cfg.URL is where the load goes
// (top's load balancer, or one of its instances), cfg.Instances are asked
// for their critical sections. It waits, at most 30s, for the stack to be
// whole (an error wrapping ErrNotReady if it is not), then asks GET
// /strategies which locks the app offers. It holds the stack's run guard
// (Config.Guard's, or one it takes: an error naming the holder when
// another run has it) until Close. p shows the runs (nil: nothing); the
// sessions of a suite share one. Close the session when done.
func Open(ctx context.Context, cfg Config, top Topology, p *Progress) (*Session, error) {
	cfg, err := cfg.Normalize()
	if err != nil {
		return nil, err
	}
	if cfg.RunKey == "" {
		cfg.RunKey = keyOf(top)
	}
	s := &Session{h: newHarness(cfg), top: top, p: p}
	if err := settle(ctx, s.h, top); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.h.hold(ctx); err != nil { // held until Close
		s.Close()
		return nil, err
	}
	if s.offered, err = s.h.strategies(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Offers reports whether the app offers lock (GET /strategies lists it).
func (s *Session) Offers(lock string) bool { return slices.Contains(s.offered, lock) }

// OfferedLocks are the locks the app offers (GET /strategies), in its order.
func (s *Session) OfferedLocks() []string { return slices.Clone(s.offered) }

// Unavailable says why the app cannot serve lock here ("" when it can):
// GET /strategies lists it as unavailable, its server missing.
func (s *Session) Unavailable(lock string) string { return s.h.unavailable[lock] }

// Run resets the stock, loads /{endpoint}?lock={lock} shaped by sh, reads
// the counters back and judges the run, as RunOne does; the stack must be
// whole before the reset and before the read-back.
//
// After a run whose requests failed at the load balancer (an instance
// down: 502, 504, no answer), the next waits until lbFailTimeout has
// passed: each nginx worker skips, on its own, the instances it failed to
// reach, and settle sees the instances through whichever worker answers
// it, while the next run's connections may land on another, one that
// still skips all three and answers every request 502 at once (a crash
// run in CI: 1200 requests, none served, no instance down).
func (s *Session) Run(ctx context.Context, lock, endpoint string, sh Shape) (Row, error) {
	if !Sleep(ctx, time.Until(s.calm)) {
		return Row{}, ctx.Err()
	}
	ld := sh.load(s.h.cfg.Requests, s.h.cfg.Stock)
	ld.settle = func(ctx context.Context) error { return settle(ctx, s.h, s.top) }
	s.p.setScope(sh.Scenario)
	defer s.p.setScope("")
	row, err := s.h.runOne(ctx, lock, endpoint, s.p, ld)
	if unanswered(row.Codes) > 0 {
		s.calm = time.Now().Add(lbFailTimeout + 100*time.Millisecond)
	}
	return row, err
}

// Close releases the guard the session took and closes its connections.
func (s *Session) Close() { s.h.close() }
