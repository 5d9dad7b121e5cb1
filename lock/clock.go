package lock

import (
	"context"
	"sync/atomic"
	"time"
)

// Ticker paces a watchdog's renewals (watchdog.go). Wait returns true at
// the next tick, false once ctx ends; Stop ends the ticker. The default
// is time.NewTicker's; the explorer (package explore) sets its own with
// SetTicker, so that a watchdog renews on the explorer's virtual time and
// a paused process renews nothing.
type Ticker interface {
	Wait(ctx context.Context) bool
	Stop()
}

// tickers makes every watchdog's Ticker: realTicker unless SetTicker
// replaced it.
var tickers atomic.Pointer[func(every time.Duration) Ticker]

// SetTicker makes the watchdogs started from now on tick by f (nil: real
// time again). Only a program that drives time itself, the explorer,
// calls it.
func SetTicker(f func(every time.Duration) Ticker) {
	if f == nil {
		tickers.Store(nil)
		return
	}
	tickers.Store(&f)
}

// NewTicker returns a Ticker ticking every every: real time unless
// SetTicker replaced it.
func NewTicker(every time.Duration) Ticker {
	if f := tickers.Load(); f != nil {
		return (*f)(every)
	}
	return realTicker{time.NewTicker(every)}
}

type realTicker struct{ t *time.Ticker }

func (r realTicker) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-r.t.C:
		return true
	}
}

func (r realTicker) Stop() { r.t.Stop() }

// afters makes the waits between two tries (waitTimer): time.Timer's
// unless SetAfter replaced it.
var afters atomic.Pointer[func(d time.Duration) <-chan time.Time]

// SetAfter makes the waits between two tries that start from now on end
// by f (nil: real time again): a waiter that sleeps d, or waits d for
// its refresh tick, wakes when f's channel delivers. Only a program that
// drives time itself, the explorer, calls it: there a waiter sleeps
// until the search decides that it tries again.
func SetAfter(f func(d time.Duration) <-chan time.Time) {
	if f == nil {
		afters.Store(nil)
		return
	}
	afters.Store(&f)
}
