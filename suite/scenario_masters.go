package suite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

// onMasters runs act (verb, in errors) on Redlock masters 0 to k-1 of t,
// all at once: a majority goes down, and comes back, together. C is what
// act needs of the stack (masterControl, masterCrash).
func onMasters[C any](t Stack, k int, verb string, act func(C, int) error) error {
	c, ok := t.(C)
	if !ok {
		return fmt.Errorf("the stack cannot %s its Redlock masters", verb)
	}
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Go(func() {
			if err := act(c, i); err != nil {
				errs[i] = fmt.Errorf("%s master %d: %w", verb, i, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mastersDown stops k of the 5 Redlock masters a third of the way in.
// With no majority left every later request waits its whole wait for a
// 503: a short wait makes the same point without two thirds of the run
// spent waiting (1s made the row half a minute long).
func mastersDown(k int) Scenario {
	name, wait := "masters-down", "1s"
	about := "5 Redlock masters; 2 stopped a third of the way in: still a majority"
	if k != 2 {
		name, wait = fmt.Sprintf("masters-down-%d", k), "250ms"
		about = fmt.Sprintf("5 Redlock masters, wait 250ms; %d stopped a third of the way in: no majority left", k)
	}
	return Scenario{
		Name:    name,
		About:   about,
		AppArgs: []string{"-lock-wait", wait},
		Hooks: []Hook{{
			At:    1.0 / 3,
			About: fmt.Sprintf("stop %d of 5 masters", k),
			Do: func(ctx context.Context, t Stack) error {
				return onMasters(t, k, "stop", masterControl.StopMaster)
			},
			Undo: func(ctx context.Context, t Stack) error {
				return onMasters(t, k, "start", masterControl.StartMaster)
			},
		}},
		Expect:    map[string]string{"redlock": bench.VerdictSafe, "redsync-redlock": bench.VerdictSafe},
		SkipOther: "only redlock and redsync-redlock use the masters",
	}
}

// masterCrash is a Stack whose Redlock masters can be SIGKILLed and
// restarted with what they persisted (*stack.Stack has it).
type masterCrash interface {
	CrashMaster(i int) error
	RestartMaster(i int) error
}

// The majority-crash scenarios' lease and the business of their armed
// request: the holder is well inside its lease when the masters crash,
// so that whatever lets a second holder in, it is not the lease running
// out. The business is long because, with the holder's key still on the
// 2 masters that did not crash, the others need all 3 restarted ones, and
// the heads of two instances' lines, woken by the same deletion, often
// split them (rung 10's split vote): with 1s, no second holder got in
// before the first was done in one run of two. Measured with 3s (a probe
// under load): the first sale of a second holder 33ms after the restart,
// sales for 390ms, then split votes until the first holder released.
const (
	majorityTTL  = 4 * time.Second
	majorityWork = 3 * time.Second
	majorityWait = 3 * time.Second // -lock-wait: how long the others wait
)

// majorityCrash: article 002's objection to Redlock. A holder is inside
// a long business when 3 of the 5 masters that granted its lock are
// SIGKILLed; restarted at once and empty, they forget the lock, and a
// majority grants it again while the first holder still writes. The two
// answers the article gives: the masters persist every write before
// answering (aof), or a restarted master stays out for one lease (delay).
func majorityCrash(name string, aof bool, delay time.Duration) Scenario {
	k := lock.Quorum(stack.DefaultMasters)
	how := "restarted at once, empty"
	expect := oversold
	switch {
	case aof:
		how, expect = "restarted at once from their append-only files (appendfsync always)", safe
	case delay > 0:
		how, expect = fmt.Sprintf("restarted empty %s later (one lease)", delay), safe
	}
	restart := func(ctx context.Context, t Stack) error {
		return onMasters(t, k, "restart", masterCrash.RestartMaster)
	}
	return Scenario{
		Name: name,
		About: fmt.Sprintf("lease %s; a request holds the lock with work=%s; %d of 5 masters SIGKILLed while it holds, %s",
			majorityTTL, majorityWork, k, how),
		AppArgs:        []string{"-faults", "-lock-ttl", majorityTTL.String(), "-lock-wait", majorityWait.String()},
		MastersAOF:     aof,
		CrashesMasters: true,
		Armed:          url.Values{"work": {majorityWork.String()}},
		ArmAt:          []float64{1.0 / 3},
		Hooks: []Hook{{
			At:    1.0 / 3,
			About: fmt.Sprintf("crash %d of 5 masters under the armed holder", k),
			Do: func(ctx context.Context, t Stack) error {
				if err := awaitHolder(ctx, t, mastersLocks, majorityWork/10); err != nil {
					return err
				}
				return onMasters(t, k, "crash", masterCrash.CrashMaster)
			},
			Then: func(ctx context.Context, t Stack) error {
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
				return restart(ctx, t)
			},
			Undo: restart,
		}},
		StallBound: 3 * majorityTTL,
		Expect:     map[string]string{"redlock": expect, "redsync-redlock": expect},
		SkipOther:  "only redlock and redsync-redlock use the masters",
	}
}

// mastersLocks are the locks on the Redlock masters: the run under way
// is one of them.
var mastersLocks = []string{"redlock", "redsync-redlock"}

// awaitHolder waits until an instance of t shows a section of one of
// locks held for longer than held (the armed request's), for at most the
// app's wait bound and the business.
func awaitHolder(ctx context.Context, t Stack, locks []string, held time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, majorityWait+majorityWork)
	defer cancel()
	probe := &http.Client{Transport: &http.Transport{}, Timeout: time.Second}
	defer probe.CloseIdleConnections()
	for {
		for _, base := range t.InstanceURLs() {
			for _, lock := range locks {
				if _, ok := holder(ctx, probe, base, lock, held); ok {
					return nil
				}
			}
		}
		if !bench.Sleep(ctx, 5*time.Millisecond) {
			return fmt.Errorf("no instance held %v for %s: the armed request never got it", locks, held)
		}
	}
}
