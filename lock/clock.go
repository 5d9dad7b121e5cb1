package lock

import (
	"context"
	"time"
)

// Ticker paces a watchdog's renewals (watchdog.go). Wait returns true at
// the next tick, false once ctx ends; Stop ends the ticker. A rung makes
// its Tickers by Options.Ticker: time.NewTicker's by default; the
// explorer (package explore) gives its own, so that a watchdog renews on
// the explorer's virtual time and a paused process renews nothing.
type Ticker interface {
	Wait(ctx context.Context) bool
	Stop()
}

// RealTicker is the default Options.Ticker: time.NewTicker's.
func RealTicker(every time.Duration) Ticker { return realTicker{time.NewTicker(every)} }

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
