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
// A run judges counters nobody else can reach: each take opens a scope
// of its own (Holder.Scope, "run12": a sequence number in Redis, SeqKey),
// and the app keeps the counters of every request carrying the run's
// token under that scope's keys (inventory.ItemIn), apart from the lab's
// items that requests without a token use. A request that passed the
// guard's check before the run took it, or one of a run that ended,
// lands in the lab's items or its own run's scope, never in the run's:
// the guard's check and the request's write are two steps, and the
// scope makes the gap between them harmless. A request with a token
// that is not the holder's is refused (409 guard_lost), never moved to
// the lab's items.
//
// The owner's runs come first: a run taken for a page's request (Guest:
// a race or an exploration the race server runs for anyone on the
// host's loopback) gives the stack up to a take of the owner's (the
// bench, the demo, the matrix), at once: the guest's renewal and its
// requests are refused from then on (guard_lost), and its scope is its
// own, so what it still sends cannot touch the owner's run. Guests take
// the stack one at a time as before.
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

// SeqKey counts the takes: each run's scope is "run" and its number. Its
// hash tag puts it in Key's slot on a Redis Cluster (Key, without braces,
// hashes whole), so one script reads and writes both.
const SeqKey = "{" + Key + "}:seq"

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

// Holder is the run that holds the guard: its name and when it took it,
// whether a page's request took it (Guest), and its scope.
type Holder struct {
	Owner string    `json:"owner"`
	Since time.Time `json:"since"`
	Guest bool      `json:"guest,omitempty"`
	// Scope names the keys of the run's counters (inventory.ItemIn):
	// "run" and the take's number.
	Scope string `json:"scope,omitempty"`
}

func (h Holder) String() string {
	if h.Owner == "" {
		return "another run, which has let it go since"
	}
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
	// Preempted, with Lost: the caller's was a guest's run, and the
	// owner's run took the stack from it.
	Preempted bool
}

func (e *BusyError) Error() string {
	if e.Preempted {
		return fmt.Sprintf("the stack's owner took the stack for a run of its own: %s; a run for a page's request gives way to the owner's, and what it sends from now on is refused", e.Holder)
	}
	if e.Bound {
		return fmt.Sprintf("the stack's run guard was held %s, its bound, renewals included: %s let it go; what this run reads back from now on is unguarded", MaxHold, e.Holder)
	}
	if e.Lost {
		return fmt.Sprintf("this run lost the stack's run guard (it expired, or the owner's run took the stack from a page's): %s took it; this run's requests are refused from then on, and what it read back is no verdict", e.Holder)
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

// value is what the guard's key holds: "TOKEN UNIXMS SEQ KIND OWNER",
// KIND "g" for a guest's run, "o" for the owner's. The scripts read the
// first four fields.
func value(token string, h Holder) (string, error) {
	seq, err := seqOf(h.Scope)
	if err != nil {
		return "", err
	}
	kind := "o"
	if h.Guest {
		kind = "g"
	}
	return strings.Join([]string{token, strconv.FormatInt(h.Since.UnixMilli(), 10), strconv.FormatInt(seq, 10), kind, h.Owner}, " "), nil
}

// parse reads a value back into its token and holder.
func parse(v string) (token string, h Holder, err error) {
	parts := strings.SplitN(v, " ", 5)
	if len(parts) != 5 || (parts[3] != "g" && parts[3] != "o") {
		return "", Holder{}, fmt.Errorf("guard: the key %s holds %q, not a run", Key, truncate(v, 64))
	}
	ms, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || seq < 1 {
		return "", Holder{}, fmt.Errorf("guard: the key %s holds %q, not a run", Key, truncate(v, 64))
	}
	return parts[0], Holder{Owner: parts[4], Since: time.UnixMilli(ms).UTC(), Guest: parts[3] == "g", Scope: scopeNo(seq)}, nil
}

// scopeNo is the scope of the take numbered seq: "run12".
func scopeNo(seq int64) string { return "run" + strconv.FormatInt(seq, 10) }

// seqOf reads a scope's number back.
func seqOf(scope string) (int64, error) {
	n, ok := strings.CutPrefix(scope, "run")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || seq < 1 || strconv.FormatInt(seq, 10) != n {
		return 0, fmt.Errorf("guard: %q is not a run's scope (run1, run2, ...)", truncate(scope, 32))
	}
	return seq, nil
}

// CheckScope says what is wrong with a run's scope, nil when nothing is.
func CheckScope(scope string) error {
	_, err := seqOf(scope)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
