package suite

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// longestFaults are the faults that take the longest, longest first: a
// lane takes them first, so that the lanes end about together (the
// repeats, the failover trials, the retry trap's two runs).
var longestFaults = []int{7, 5, 4}

// runChaosLanes is RunChaos with cfg.Lanes faults at once, each fault a
// RunChaos of its own, on stacks of its own. The lanes share cfg.Progress
// one line at a time (no live line: two runs redraw it at once). A
// random seed is picked once, for every lane's fault 7 alike.
func runChaosLanes(ctx context.Context, cfg ChaosConfig) ([]ChaosRow, error) {
	c, err := newChaos(cfg) // the defaults and checks, once
	if err != nil {
		return nil, err
	}
	faults := c.cfg.Faults
	order := slices.Clone(faults)
	slices.SortStableFunc(order, func(a, b int) int { return rank(a) - rank(b) })

	lane := c.cfg
	lane.Lanes = 0
	if lane.Progress != nil {
		lane.Progress = &lockedWriter{w: lane.Progress}
	}
	byFault := make([][]ChaosRow, len(faults))
	errs := make([]error, len(faults))
	var failed atomic.Bool
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.Lanes, len(faults)) {
		wg.Go(func() {
			for i := range next {
				if failed.Load() {
					continue
				}
				one := lane
				one.Faults = faults[i : i+1]
				byFault[i], errs[i] = RunChaos(ctx, one)
				if errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	for _, f := range order {
		next <- slices.Index(faults, f)
	}
	close(next)
	wg.Wait()
	return slices.Concat(byFault...), errors.Join(errs...)
}

// rank places the longest faults first, the others in their order.
func rank(f int) int {
	if i := slices.Index(longestFaults, f); i >= 0 {
		return i - len(longestFaults)
	}
	return f
}

// lockedWriter writes one Write at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
