package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backoff says how long to sleep before the next attempt. One Backoff serves
// one Obtain call, so it may keep state.
type Backoff interface {
	NextBackoff() time.Duration
}

type fixed time.Duration

func (f fixed) NextBackoff() time.Duration { return time.Duration(f) }

// FixedSleep retries after the same pause every time, as the articles do
// (100ms, 60ms, 1s, 1ms). Under contention it polls blindly: short sleeps
// waste Redis round trips, long ones leave the lock idle.
func FixedSleep(d time.Duration) func() Backoff {
	return func() Backoff { return fixed(d) }
}

// acquire calls try until it reports success, the wait bound passes, or ctx
// ends. It is the one wait loop every Redis rung uses.
func acquire(ctx context.Context, o Options, try func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()

	backoff := o.Retry()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ok, err := try(ctx)
		switch {
		case ok:
			return nil
		case err != nil && !errors.Is(err, ctx.Err()):
			// The back end failed (Redis unreachable, say): report that,
			// not a lock that merely seemed busy.
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%w: waited %s: %w", ErrNotObtained, o.Wait, ctx.Err())
		}
		d := backoff.NextBackoff()
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: waited %s: %w", ErrNotObtained, o.Wait, ctx.Err())
		case <-timer.C:
		}
	}
}
