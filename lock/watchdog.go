package lock

import (
	"context"
	"time"
)

// watchdog keeps a held lock's lease alive, as Redisson's does: every
// TTL/3 it runs renew, which extends the lease only while the lock is still
// ours, and it stops on stop() or as soon as renew finds the lock gone.
// Rung 9 (reentrant) and rung 12 (fair) use it, and through fair's lock
// rung 13's cohorts. It runs in the holder's process, so a process that
// is paused (GC, SIGSTOP) renews nothing: the flaw rung 9 still shows.
type watchdog struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
}

// startWatchdog renews every ttl/3 by renew, which reports whether the
// lease is still ours; when it is not, lapsed (if any) runs and the
// watchdog ends. A renewal that fails (Redis slow or unreachable) is tried
// again at the next tick; if that lasts past the TTL, the lease lapses and
// the next renewal finds the lock gone.
func startWatchdog(ticker func(time.Duration) Ticker, ttl time.Duration, renew func(context.Context) (bool, error), lapsed func(*watchdog)) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	wd := &watchdog{cancel: cancel, done: make(chan struct{})}
	// The ticker is made here, by the holder, not in the goroutine: a
	// Ticker the explorer sets knows whose watchdog it paces.
	every := max(ttl/3, time.Millisecond)
	tick := ticker(every)
	go func() {
		defer close(wd.done)
		defer tick.Stop()
		for tick.Wait(ctx) {
			rctx, cancelRenew := context.WithTimeout(ctx, every)
			ours, err := renew(rctx)
			cancelRenew()
			if err == nil && !ours {
				if lapsed != nil {
					lapsed(wd)
				}
				return
			}
		}
	}()
	return wd
}

// stop ends the watchdog and waits for its goroutine to return. A nil
// watchdog (a lock taken with an explicit lease: no renewal) is stopped.
func (wd *watchdog) stop() {
	wd.halt()
	wd.wait()
}

// halt tells the watchdog to renew no more, without waiting for it.
func (wd *watchdog) halt() {
	if wd != nil {
		wd.cancel()
	}
}

// wait waits for the watchdog's goroutine to return.
func (wd *watchdog) wait() {
	if wd != nil {
		<-wd.done
	}
}
