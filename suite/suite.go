// Package suite runs the lab's suites on top of the bench library, each
// scenario or fault on a fresh stack of its own (package stack) on free
// loopback ports, never on the ports of a stack already up:
//
//   - the matrix (RunMatrix, CompareMatrix): every lock under each
//     scenario of docs/scenarios.md that shows a rung's flaw, and a grid of
//     the verdicts against the ladder's (WriteGrid);
//   - the fault suite (RunChaos, CompareChaos): what the safe locks do when
//     parts of the stack fail under load, faults 1 to 8, a file each.
//
// A scenario is data (Scenario): the stack's flags, the requests it arms,
// the hooks it fires on the stack, and the ladder's verdict per lock. Each
// is run as a bench.Shape in a bench.Session on its stack.
package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// Stack is a running stack as the suites use it: what a run needs of it
// (bench.Topology), and Stop. *stack.Stack is one; tests start fakes
// (MatrixConfig.Start, ChaosConfig.Start).
type Stack interface {
	bench.Topology
	Stop() error
}

// masterControl is a Stack whose Redlock masters can be stopped and
// started again, by 0-based index; *stack.Stack is one.
type masterControl interface {
	StopMaster(i int) error
	StartMaster(i int) error
}

var (
	_ Stack          = (*stack.Stack)(nil)
	_ backendControl = (*stack.Stack)(nil)
	_ masterControl  = (*stack.Stack)(nil)
)

// startStack is stack.Start as a Stack (a nil one on error).
func startStack(ctx context.Context, c stack.Config) (Stack, error) {
	s, err := stack.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// matrixPair is one run of a scenario and the verdict the ladder expects
// ("": none, as in the fault suite).
type matrixPair struct{ lock, endpoint, expected string }

// runScenario runs pairs on the scenario's running stack, one after the
// other, each once the stack is whole, and puts the stack back after each
// (the hooks' Undo).
func runScenario(ctx context.Context, sc Scenario, top Stack, base bench.Config, pairs []matrixPair, p *bench.Progress) ([]bench.Row, []Skip, error) {
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
	s, err := bench.Open(ctx, cfg, top, p)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: scenario %s: %w", sc.Name, err)
	}
	defer s.Close()

	var rows []bench.Row
	var skips []Skip
	for _, pr := range pairs {
		if !s.Offers(pr.lock) {
			if !slices.ContainsFunc(skips, func(s Skip) bool { return s.Lock == pr.lock }) {
				skips = append(skips, Skip{Scenario: sc.Name, Lock: pr.lock,
					Reason: "the app does not offer it (GET /strategies)"})
			}
			continue
		}
		if why := s.Unavailable(pr.lock); why != "" {
			if !slices.ContainsFunc(skips, func(s Skip) bool { return s.Lock == pr.lock }) {
				skips = append(skips, Skip{Scenario: sc.Name, Lock: pr.lock, Reason: "unavailable here: " + why})
			}
			continue
		}
		sh := sc.shape(top)
		sh.Expected = pr.expected
		row, err := s.Run(ctx, pr.lock, pr.endpoint, sh)
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
func undo(ctx context.Context, sc Scenario, top Stack) error {
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
