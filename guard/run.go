package guard

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Run is what takes the guard, as the app names it there: a caller
// says what it runs, never its name, which the app composes (Name), so
// that the holder a busy stack shows is one of the lab's runs.
type Run struct {
	Kind     string // one of Kinds
	Lock     string // a run of one lock: its name ("" for many)
	Endpoint string // with Lock: "sale" or "testLock" ("" for both)
	Scenario string // with Lock: the scenario it runs under ("" for none)
	// Guest: the run is taken for a page's request (a race or an
	// exploration that anyone on the loopback may ask the race server
	// for), and gives the stack up to the owner's runs.
	Guest bool
}

// Kinds are the lab's runs that take the guard.
var Kinds = []string{"bench", "race", "demo", "matrix", "chaos", "explore"}

// word is a lock's name: lower case, digits, dashes; a scenario's may
// have spaces too.
var (
	word     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	scenario = regexp.MustCompile(`^[a-z0-9][a-z0-9 -]{0,31}$`)
)

// Check says what is wrong with r, nil when nothing is.
func (r Run) Check() error {
	switch {
	case !slices.Contains(Kinds, r.Kind):
		return fmt.Errorf("run: %q is not one of the lab's runs (%s)", truncate(r.Kind, 32), strings.Join(Kinds, ", "))
	case r.Lock != "" && !word.MatchString(r.Lock):
		return fmt.Errorf("lock: %q is not a lock's name", truncate(r.Lock, 32))
	case r.Endpoint != "" && r.Endpoint != "sale" && r.Endpoint != "testLock":
		return fmt.Errorf("endpoint: %q is neither sale nor testLock", truncate(r.Endpoint, 32))
	case r.Scenario != "" && !scenario.MatchString(r.Scenario):
		return fmt.Errorf("scenario: %q is not a scenario's name", truncate(r.Scenario, 32))
	case r.Lock == "" && (r.Endpoint != "" || r.Scenario != ""):
		return fmt.Errorf("endpoint= and scenario= go with lock=")
	}
	return nil
}

// Name is the run's name in the guard: "race of lua on sale under
// pause", "bench".
func (r Run) Name() string {
	n := r.Kind
	if r.Lock != "" {
		n += " of " + r.Lock
	}
	if r.Endpoint != "" {
		n += " on " + r.Endpoint
	}
	if r.Scenario != "" {
		n += " under " + r.Scenario
	}
	return n
}

// Values is r as a query: run=, lock=, endpoint=, scenario=, guest=1.
func (r Run) Values() url.Values {
	q := url.Values{"run": {r.Kind}}
	if r.Guest {
		q.Set("guest", "1")
	}
	for k, v := range map[string]string{"lock": r.Lock, "endpoint": r.Endpoint, "scenario": r.Scenario} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// RunOf reads a Run from a query (Values), checked.
func RunOf(q url.Values) (Run, error) {
	if !q.Has("run") {
		return Run{}, fmt.Errorf("missing run: say ?run=KIND, what runs (%s); the app names the holder from it", strings.Join(Kinds, ", "))
	}
	r := Run{Kind: q.Get("run"), Lock: q.Get("lock"), Endpoint: q.Get("endpoint"), Scenario: q.Get("scenario")}
	if q.Has("guest") {
		if q.Get("guest") != "1" {
			return Run{}, fmt.Errorf("guest: %q is not 1 (a page's run; leave it out for the owner's)", truncate(q.Get("guest"), 32))
		}
		r.Guest = true
	}
	return r, r.Check()
}
