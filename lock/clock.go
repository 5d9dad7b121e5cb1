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

func newTicker(every time.Duration) Ticker {
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
