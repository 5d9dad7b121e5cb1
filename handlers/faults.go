package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/number"
)

// The faults a request may arm on an instance started with -faults
// (docs/scenarios.md): work=, takeover=, fault=, pause=, until= and skew=. A
// request arms its own, and only its own: the plan travels in its context
// to the fault points of package fault, and skew= in its lock.Call.

// faultKind is what fault= asks for.
type faultKind string

const (
	crash             faultKind = "crash"               // exit right after acquiring
	crashBeforeExpire faultKind = "crash-before-expire" // exit between SETNX and EXPIRE
	checkPause        faultKind = "check-pause"         // sleep between check and delete
	pause             faultKind = "pause"               // SIGSTOP the process inside the business
)

// faultKinds lists every fault= value.
var faultKinds = []faultKind{crash, crashBeforeExpire, checkPause, pause}

// maxFaultDuration bounds work=, takeover=, pause= and skew=.
const maxFaultDuration = 10 * time.Second

// ExitCode is the status an instance that fault=crash (or
// crash-before-expire) kills exits with; the stack's supervisor logs it.
const ExitCode = 3

// faultParams are the query parameters that arm faults.
var faultParams = []string{"work", "takeover", "fault", "pause", "until", "skew"}

// until='s values: a pause that lasts until another request has written
// the item (fault=pause), a check-pause that lasts until another holder
// has just taken the lock (fault=check-pause).
const (
	untilWritten = "written"
	untilTaken   = "taken"
)

// faultsAllowed reports whether the request may arm faults: on an
// instance started with -faults, any request; with only a fault key
// (Config.FaultKey), one that carries it (contract.HeaderFaultKey); else
// none. When not, why says so, for the 400.
func (h *handler) faultsAllowed(c *gin.Context) (ok bool, why string) {
	switch {
	case h.cfg.Faults == nil:
		return false, "disabled on this instance: start it with -faults"
	case h.cfg.FaultKey == "":
		return true, ""
	}
	got := c.GetHeader(contract.HeaderFaultKey)
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.FaultKey)) == 1 {
		return true, ""
	}
	return false, "only for the lab's own runs on this instance: they carry the fault key its stack handed it"
}

// plan is what one request armed.
type plan struct {
	Work     time.Duration // the business sleeps this long between read and write
	Takeover time.Duration // a waiter that read an expired lease sleeps this long before taking it over
	Kind     faultKind
	Pause    time.Duration // for check-pause and pause
	// Until: a pause (fault=pause) lasts pause= at least, then until
	// another request has written the item since the stop, at most pause=
	// more: the lease has lapsed and a second holder has written when the
	// paused one wakes, however slowly the others ran (until=written).
	Until bool
	// UntilTaken: a check-pause lasts pause= at least, then until another
	// holder has just taken the lock (its key holds a token it did not
	// hold at the last look), at most pause= more: the stale DEL lands at
	// the start of that holder's business, before its write
	// (until=taken).
	UntilTaken bool
	// Skew runs this request's lock clock ahead (lock.Call.Skew), as an
	// instance's -clock-skew runs all of its requests'.
	Skew time.Duration
}

// armed reports whether the plan strikes at a fault point (skew= does
// not: the lock reads it from the call).
func (p plan) armed() bool { return p.Work > 0 || p.Takeover > 0 || p.Kind != "" }

// parsePlan reads work=, takeover=, fault=, pause= and skew= from q.
// Absent parameters arm nothing; anything malformed is an error naming the
// parameter.
func parsePlan(q url.Values) (plan, error) {
	var p plan
	var err error
	if p.Work, err = duration(q, "work"); err != nil {
		return plan{}, err
	}
	if p.Takeover, err = duration(q, "takeover"); err != nil {
		return plan{}, err
	}
	if p.Pause, err = duration(q, "pause"); err != nil {
		return plan{}, err
	}
	if p.Skew, err = duration(q, "skew"); err != nil {
		return plan{}, err
	}
	if q.Has("until") {
		switch v, k := q.Get("until"), faultKind(q.Get("fault")); {
		case v != untilWritten && v != untilTaken:
			return plan{}, fmt.Errorf("until: %q is neither %q (fault=pause: until another request wrote the item) nor %q (fault=check-pause: until another holder took the lock)",
				truncate(v, 32), untilWritten, untilTaken)
		case v == untilWritten && k == pause:
			p.Until = true
		case v == untilTaken && k == checkPause:
			p.UntilTaken = true
		default:
			return plan{}, errors.New("until: written only with fault=pause, taken only with fault=check-pause")
		}
	}
	if q.Has("fault") {
		k := faultKind(q.Get("fault"))
		switch k {
		case crash, crashBeforeExpire:
			if p.Pause > 0 {
				return plan{}, fmt.Errorf("pause: fault=%s takes no pause", k)
			}
		case checkPause, pause:
			if p.Pause == 0 {
				return plan{}, fmt.Errorf("pause: fault=%s needs pause=DURATION (e.g. 600ms)", k)
			}
		default:
			return plan{}, fmt.Errorf("fault: unknown fault %q (valid: %v)", truncate(string(k), 32), faultKinds)
		}
		p.Kind = k
	} else if p.Pause > 0 {
		return plan{}, errors.New("pause: only with fault=check-pause or fault=pause")
	}
	return p, nil
}

func duration(q url.Values, name string) (time.Duration, error) {
	if !q.Has(name) {
		return 0, nil
	}
	d, err := number.Duration(name, q.Get(name), 0, maxFaultDuration)
	if err == nil && d == 0 {
		err = &number.Error{Param: name, Why: fmt.Sprintf("0 is out of range (0, %s]", maxFaultDuration)}
	}
	return d, err
}

// FaultActions are what faults do to the process: Config.Faults. Tests
// replace them.
type FaultActions struct {
	Exit func(code int)        // default os.Exit
	Stop func(d time.Duration) // default: SIGSTOP this process for d (StopProcess)
	// StopUntil stops the process as Stop does, then until w's counter
	// moves, at most d more (until=written). Default StopProcessUntil;
	// when only Stop is replaced, Stop(d).
	StopUntil func(d time.Duration, w Written)
	Sleep     func(d time.Duration) // default time.Sleep
}

// watch is what a plan's faults wait on, outside the process itself.
type watch struct {
	// Written is the counter until=written watches.
	Written Written
	// Taken waits, at most bound, until another holder has just taken
	// the lock (until=taken).
	Taken func(bound time.Duration)
	// Alone waits, at most bound, until no other request of this
	// instance holds the lock: what fault=crash does before it exits.
	Alone func(bound time.Duration)
}

// crashWaitsAtMost bounds how long a crash waits for its instance's other
// holders of the lock to finish (watch.Alone): under a sound lock there
// are none, and it exits at once.
const crashWaitsAtMost = time.Second

// alone waits, at most bound, until rec holds no section of key but the
// caller's own: the instance's other holders of the lock have ended
// theirs.
func alone(rec *contract.Recorder, key string, bound time.Duration) {
	holders := func() (n int) {
		for _, s := range rec.Holding() {
			if s.Key == key {
				n++
			}
		}
		return n
	}
	for end := time.Now().Add(bound); holders() > 1 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
}

// injector returns the plan's fault.Injector, doing its harm through a
// and waiting on what w watches.
//
// A crash exits once no other request of its instance holds the lock.
// Under a sound lock none does. Under one that granted it twice, the
// others are the flaw's own evidence: a crash that struck them between
// their read and their write (rungs 7's P2 and P3 on one instance, say)
// would cut their sections short and take their writes with them, and
// the run that staged the double grant would show none.
func (p plan) injector(a FaultActions, w watch, log func(error)) fault.Injector {
	if a.Exit == nil {
		a.Exit = os.Exit
	}
	if a.StopUntil == nil && a.Stop == nil {
		a.StopUntil = func(d time.Duration, w Written) { log(StopProcessUntil(d, &w)) }
	}
	if a.Stop == nil {
		a.Stop = func(d time.Duration) { log(StopProcess(d)) }
	}
	if a.StopUntil == nil {
		a.StopUntil = func(d time.Duration, _ Written) { a.Stop(d) }
	}
	if a.Sleep == nil {
		a.Sleep = time.Sleep
	}
	return func(_ context.Context, at fault.Point) {
		switch {
		case at == fault.Acquired && p.Kind == crash:
			if w.Alone != nil {
				w.Alone(crashWaitsAtMost)
			}
			a.Exit(ExitCode)
		case at == fault.BeforeExpire && p.Kind == crashBeforeExpire:
			a.Exit(ExitCode)
		case at == fault.BeforeDelete && p.Kind == checkPause:
			a.Sleep(p.Pause)
			if p.UntilTaken && w.Taken != nil {
				w.Taken(p.Pause)
			}
		case at == fault.Expired && p.Takeover > 0:
			a.Sleep(p.Takeover)
		case at == fault.Business:
			if p.Work > 0 {
				a.Sleep(p.Work)
			}
			switch {
			case p.Kind == pause && p.Until:
				a.StopUntil(p.Pause, w.Written)
			case p.Kind == pause:
				a.Stop(p.Pause)
			}
		}
	}
}
