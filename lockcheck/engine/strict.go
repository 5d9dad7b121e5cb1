package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
)

// Search runs ex's search (Run) and says what kept it from a verdict:
// a failure of the lock's code (Target.Strict), a schedule that went
// another way when run again, a panic of the search's. It closes ex.
func (ex *Explorer) Search(ctx context.Context) (r Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("lockcheck: %s: %v (does its Obtain make one attempt and return, and wait on nothing but Redis and Env?)", ex.target.Name, p)
			return // the world's goroutines may be stuck: the Redis is left to them
		}
		ex.Close()
	}()
	r = ex.Run(ctx)
	if e := ex.failure(); e != nil {
		return r, e
	}
	if r.Diverged > 0 {
		return r, fmt.Errorf("lockcheck: %s: %d schedules went another way when run again: the lock does something the search does not drive (a timer, a goroutine of its own, randomness that changes what it sends)", ex.target.Name, r.Diverged)
	}
	return r, nil
}

// Diagram is the counterexample's sequence diagram, as Write draws it
// ("" for a Result with none).
func (r Result) Diagram() string {
	if r.Verdict == None {
		return ""
	}
	var b strings.Builder
	writeDiagram(&b, r.Trace, r.Clients, r.Columns)
	return b.String()
}

// failures keeps the first failure of a checked lock's code (Target's
// strict): an error other than busy, or a panic, while the world ran.
type failures struct {
	mu  sync.Mutex
	err error
}

func (ex *Explorer) fail(err error) {
	ex.failed.mu.Lock()
	defer ex.failed.mu.Unlock()
	if ex.failed.err == nil {
		ex.failed.err = err
	}
}

func (ex *Explorer) failure() error {
	ex.failed.mu.Lock()
	defer ex.failed.mu.Unlock()
	return ex.failed.err
}

// caught records a panic of a checked lock's code in c's program (its
// program then ends, as a crash would).
func (c *client) caught() {
	if p := recover(); p != nil {
		c.w.ex.fail(fmt.Errorf("lockcheck: %s: client %s panicked: %v\n%s", c.w.ex.target.Name, c.name, p, debug.Stack()))
	}
}

// obtainFailed records the error of an Obtain that neither held nor
// found the lock busy, while the world still ran.
func (c *client) obtainFailed(err error) {
	if c.w.ex.target.Strict && !c.w.closed.Load() {
		c.w.ex.fail(fmt.Errorf("lockcheck: client %s: %s: Obtain: %w", c.name, c.w.ex.target.Name, err))
	}
}
