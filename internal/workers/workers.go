// Package workers runs functions on goroutines kept between calls:
// redlock's calls to its masters (package lock's rounds) run on them.
package workers

import (
	"sync"
	"time"
)

// Pool runs the calls to the masters on goroutines kept between
// attempts: a fresh goroutine per call grows its stack through the Redis
// client's calls every time (a tenth of the CPU of a relayed section, in
// a profile of bench-peers). A call that finds no idle worker gets a new
// one; a worker idle for a second exits.
type Pool struct {
	jobs chan func()
	once sync.Once
}

// Run runs f on an idle worker, or a new one.
func (w *Pool) Run(f func()) {
	w.once.Do(func() { w.jobs = make(chan func()) })
	select {
	case w.jobs <- f:
		return
	default:
	}
	go func() {
		f()
		idle := time.NewTimer(time.Second)
		defer idle.Stop()
		for {
			select {
			case f := <-w.jobs:
				f()
				idle.Reset(time.Second)
			case <-idle.C:
				return
			}
		}
	}()
}
