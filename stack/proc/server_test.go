package proc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// slowStart is a server whose start is work that takes a while (as
// initdb does on a loaded machine) and which serves at once after, or
// never.
type slowStart struct {
	work    time.Duration
	serves  bool
	stopped bool
}

func (s *slowStart) Start(ctx context.Context) error {
	select {
	case <-time.After(s.work):
		return nil
	case <-ctx.Done():
		return ctx.Err() // killed half done
	}
}

func (s *slowStart) Ready(ctx context.Context) error {
	if s.serves {
		return ctx.Err()
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *slowStart) Stop() error { s.stopped = true; return nil }

// LaunchWithin bounds the wait to serve, not the work of the start: a
// start that takes longer than the bound still ends in a server that
// serves, while a server that never serves fails after the bound, from
// the end of its start, and is stopped.
func TestLaunchWithinTimesTheWaitNotTheWork(t *testing.T) {
	const bound = 50 * time.Millisecond
	s := &slowStart{work: 4 * bound, serves: true}
	if err := LaunchWithin(context.Background(), s, bound); err != nil {
		t.Errorf("a start 4x the bound that then serves: %v", err)
	}
	never := &slowStart{work: 2 * bound}
	began := time.Now()
	err := LaunchWithin(context.Background(), never, bound)
	if !errors.Is(err, context.DeadlineExceeded) || !never.stopped {
		t.Errorf("a server that never serves: %v (stopped %v), want the bound's deadline and a stop", err, never.stopped)
	}
	if took := time.Since(began); took < 3*bound {
		t.Errorf("it failed after %s: the bound ran during the start's work", took)
	}
	// The caller's deadline stands over both.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := LaunchWithin(ctx, &slowStart{work: 4 * bound, serves: true}, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("under the caller's deadline: %v, want it", err)
	}
}
