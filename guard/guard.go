// Package guard is the stack's run guard: one run at a time on a stack,
// and nobody else's POST /reset, /sale or /testLock while it runs. A run
// (the bench, a race from the page, the demo, a scenario of the matrix,
// a search of the explorer) resets the stock, loads it and reads the
// counters back; a reset or a sale from anyone else in between (another
// race, the page's buttons, a curl) changes the books mid-run, and the
// read-back then shows more sold than there was: a false OVERSOLD.
//
// Only the lab's runs take it: a take, renewal or release shows the
// stack's run key (KeyHeader: its Redis password, which only the stack's
// owner reads), the app names the holder from what runs (Run) and makes
// the token, and no holding lasts over MaxHold, renewals included.
//
// The guard is a lease in the stack's Redis, the one the instances
// share: a key written with SET NX PX holding a random token, the time
// it was taken and the run's name. A run takes it before its first
// reset and holds it to its last read-back, renewing it while it lasts
// (every third of the lease), and releases it by compare-and-delete. A
// run whose process dies stops renewing: its guard expires on its own,
// a lease after its last renewal. While a run holds it, another run's
// take is refused (ErrBusy, naming the holder and since when) and
// /reset answers 409 run_in_progress and changes nothing, unless the
// request carries the holder's token (Header): the run's own resets.
//
// Both sides import this package: the app (Store, over its Redis; it
// serves /guard and checks /reset) and the runs, which reach the guard
// through the app (Take, over HTTP): the bench knows the load balancer's
// address, not Redis's. It imports no load tool.
package guard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockladder/lockladder/contract"
)

// Key is the guard's key in the stack's Redis.
const Key = "lab:run"

// Header carries a run's token on its own requests: the app lets a
// /reset through while the guard is held only with the holder's token.
const Header = "X-Run-Token"

// KeyHeader carries the run key on a request to take, renew or release
// the guard: the stack's Redis password (stack.RedisPasswordFile), which
// only the stack's owner can read. Without it the app hands out no
// guard: nobody else on the host can hold the stack, or pass for the
// run that does.
const KeyHeader = "X-Run-Key"

// MaxHold bounds one holding of the guard, renewals included: a run
// that hangs, or loops renewing, frees the stack after it at the latest.
// The lab's longest run (the demo's ladder at the articles' size) takes
// a few minutes.
const MaxHold = 15 * time.Minute

// DefaultTTL is the guard's lease: how long it outlives its holder's
// last renewal. A run renews every third of it.
const DefaultTTL = 15 * time.Second

// Reasons in the "reason" field of the app's answers: a 409 on /reset,
// POST /guard and POST /race while another run holds the guard; a 409 on
// PUT /guard once it held it no more.
const (
	ReasonBusy = contract.ReasonRunInProgress
	ReasonLost = contract.ReasonGuardLost
	// ReasonNoKey: a 403 on POST, PUT and DELETE /guard without the
	// stack's run key (KeyHeader).
	ReasonNoKey = "run_key_required"
)

// MaxOwner bounds a run's name, in bytes.
const MaxOwner = 80

var (
	// ErrBusy: another run holds the guard (a *BusyError says which).
	ErrBusy = errors.New("guard: another run holds the stack")
	// ErrLost: the run's guard expired and another run took it: what
	// this run read back since may include that run's resets.
	ErrLost = errors.New("guard: this run no longer holds the stack")
	// ErrNotServed: the app answers no /guard (404): an app without a
	// guard, which refuses no /reset either. Runs go on without one.
	ErrNotServed = errors.New("guard: the app serves no run guard")
	// ErrNoKey: the app takes the guard only from the stack's owner,
	// who shows its Redis password (KeyHeader), and this caller did not.
	ErrNoKey = errors.New("guard: the stack's run guard is taken with the stack's Redis password (its run dir's " +
		"redis.pass, readable by the stack's owner alone), and this run has it not")
)

// Holder is the run that holds the guard: its name and when it took it.
type Holder struct {
	Owner string    `json:"owner"`
	Since time.Time `json:"since"`
}

func (h Holder) String() string {
	ago := time.Since(h.Since).Round(time.Second)
	if ago < 0 {
		ago = 0
	}
	return fmt.Sprintf("%q, since %s (%s ago)", h.Owner, h.Since.UTC().Format("15:04:05 UTC"), ago)
}

// BusyError is ErrBusy (or ErrLost, for a run that held the guard) with
// the run that holds it.
type BusyError struct {
	Holder Holder
	Lost   bool // the caller held it, and another run has it now
	Bound  bool // with Lost: the caller's holding reached MaxHold
}

func (e *BusyError) Error() string {
	if e.Bound {
		return fmt.Sprintf("the stack's run guard was held %s, its bound, renewals included: %s let it go; what this run reads back from now on is unguarded", MaxHold, e.Holder)
	}
	if e.Lost {
		return fmt.Sprintf("the stack's run guard expired and another run took it: %s; what this run read back may include its resets", e.Holder)
	}
	return fmt.Sprintf("the stack is busy: another run holds its run guard: %s; try again once it ends (a guard whose holder died expires on its own)", e.Holder)
}

// Is makes errors.Is(err, ErrBusy) true, and ErrLost when Lost.
func (e *BusyError) Is(target error) bool {
	return target == ErrBusy || (e.Lost && target == ErrLost)
}

// CheckOwner checks a run's name: 1 to MaxOwner bytes of UTF-8 text,
// no control characters.
func CheckOwner(owner string) error {
	switch {
	case owner == "" || len(owner) > MaxOwner:
		return fmt.Errorf("a run's name has 1 to %d bytes, got %d", MaxOwner, len(owner))
	case !utf8.ValidString(owner):
		return errors.New("a run's name is UTF-8 text")
	case strings.ContainsFunc(owner, unicode.IsControl):
		return errors.New("a run's name has no control characters")
	}
	return nil
}

// value is what the guard's key holds: "TOKEN UNIXMS OWNER".
func value(token string, since time.Time, owner string) string {
	return token + " " + strconv.FormatInt(since.UnixMilli(), 10) + " " + owner
}

// parse reads a value back into its token and holder.
func parse(v string) (token string, h Holder, err error) {
	parts := strings.SplitN(v, " ", 3)
	if len(parts) != 3 {
		return "", Holder{}, fmt.Errorf("guard: the key %s holds %q, not a run", Key, truncate(v, 64))
	}
	ms, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", Holder{}, fmt.Errorf("guard: the key %s holds %q, not a run", Key, truncate(v, 64))
	}
	return parts[0], Holder{Owner: parts[2], Since: time.UnixMilli(ms).UTC()}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
