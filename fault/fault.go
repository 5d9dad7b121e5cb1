// Package fault arms the faults of the lab's scenarios: it names the points
// in the lock and business code where a fault can strike, parses what one
// request asks for (work=, fault=, pause=), and does it: sleep, exit the
// process, or stop the whole process with SIGSTOP for a while.
//
// Faults are off unless an instance is started with -faults; then a
// request arms its own, and only its own: the plan travels in its context.
package fault

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
)

// Point names a place where a fault can strike.
type Point string

const (
	// Acquired: the lock is held and the business has not started.
	Acquired Point = "acquired"
	// BeforeExpire: between setnx-expire's SETNX and its EXPIRE.
	BeforeExpire Point = "before-expire"
	// BeforeDelete: between check-del's GET (the token matched) and its DEL.
	BeforeDelete Point = "before-delete"
	// Business: inside the read-modify-write, between its read and its
	// write, where a stale read does its harm.
	Business Point = "business"
)

// Injector acts at a Point: it may sleep, stop or end the process.
type Injector func(ctx context.Context, p Point)

type injectorKey struct{}

// With returns a context whose code calls in at every Point it passes.
func With(ctx context.Context, in Injector) context.Context {
	return context.WithValue(ctx, injectorKey{}, in)
}

// Inject calls the context's Injector at p, if there is one.
func Inject(ctx context.Context, p Point) {
	if in, ok := ctx.Value(injectorKey{}).(Injector); ok && in != nil {
		in(ctx, p)
	}
}

// Kind is what fault= asks for.
type Kind string

const (
	Crash             Kind = "crash"               // exit right after acquiring
	CrashBeforeExpire Kind = "crash-before-expire" // exit between SETNX and EXPIRE
	CheckPause        Kind = "check-pause"         // sleep between check and delete
	Pause             Kind = "pause"               // SIGSTOP the process inside the business
)

// Kinds lists every fault= value.
var Kinds = []Kind{Crash, CrashBeforeExpire, CheckPause, Pause}

// MaxDuration bounds work= and pause=.
const MaxDuration = 10 * time.Second

// ExitCode is the status a crashing instance exits with.
const ExitCode = 3

// Params are the query parameters that arm faults.
var Params = []string{"work", "fault", "pause"}

// Plan is what one request armed.
type Plan struct {
	Work  time.Duration // the business sleeps this long between read and write
	Kind  Kind
	Pause time.Duration // for check-pause and pause
}

// Armed reports whether the plan does anything.
func (p Plan) Armed() bool { return p.Work > 0 || p.Kind != "" }

// Parse reads work=, fault= and pause= from q. Absent parameters arm
// nothing; anything malformed is an error naming the parameter.
func Parse(q url.Values) (Plan, error) {
	var p Plan
	var err error
	if p.Work, err = duration(q, "work"); err != nil {
		return Plan{}, err
	}
	if p.Pause, err = duration(q, "pause"); err != nil {
		return Plan{}, err
	}
	if q.Has("fault") {
		k := Kind(q.Get("fault"))
		switch k {
		case Crash, CrashBeforeExpire:
			if p.Pause > 0 {
				return Plan{}, fmt.Errorf("pause: fault=%s takes no pause", k)
			}
		case CheckPause, Pause:
			if p.Pause == 0 {
				return Plan{}, fmt.Errorf("pause: fault=%s needs pause=DURATION (e.g. 600ms)", k)
			}
		default:
			return Plan{}, fmt.Errorf("fault: unknown fault %q (valid: %v)", truncate(string(k)), Kinds)
		}
		p.Kind = k
	} else if p.Pause > 0 {
		return Plan{}, errors.New("pause: only with fault=check-pause or fault=pause")
	}
	return p, nil
}

func duration(q url.Values, name string) (time.Duration, error) {
	if !q.Has(name) {
		return 0, nil
	}
	s := q.Get(name)
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration (e.g. 300ms)", name, truncate(s))
	}
	if d <= 0 || d > MaxDuration {
		return 0, fmt.Errorf("%s: %s is out of range (0, %s]", name, d, MaxDuration)
	}
	return d, nil
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// Actions are what faults do to the process. Tests replace them.
type Actions struct {
	Exit  func(code int)        // default os.Exit
	Stop  func(d time.Duration) // default StopProcess
	Sleep func(d time.Duration) // default time.Sleep
}

// Injector returns the plan's Injector, doing its harm through a.
func (p Plan) Injector(a Actions) Injector {
	if a.Exit == nil {
		a.Exit = os.Exit
	}
	if a.Stop == nil {
		a.Stop = func(d time.Duration) { _ = StopProcess(d) }
	}
	if a.Sleep == nil {
		a.Sleep = time.Sleep
	}
	return func(_ context.Context, at Point) {
		switch {
		case at == Acquired && p.Kind == Crash,
			at == BeforeExpire && p.Kind == CrashBeforeExpire:
			a.Exit(ExitCode)
		case at == BeforeDelete && p.Kind == CheckPause:
			a.Sleep(p.Pause)
		case at == Business:
			if p.Work > 0 {
				a.Sleep(p.Work)
			}
			if p.Kind == Pause {
				a.Stop(p.Pause)
			}
		}
	}
}
