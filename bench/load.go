package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Shape shapes the requests of a run beyond ?lock=: parameters on every
// request and more on a few armed ones, hooks fired at given moments, and
// a stall bound. Armed requests and hooks sit at fractions of the run's
// window, min(requests, stock): the hits sure to find stock left, since a
// sale reaches its read-modify-write (where work= and fault=pause strike)
// only while there is some. Package suite's scenarios and faults are
// shapes; the zero Shape is a plain run.
type Shape struct {
	Scenario string     // the row's scenario; "": ScenarioNormal
	Every    url.Values // query parameters on every request (work=5ms)
	Armed    url.Values // more on the armed requests (fault=crash)
	ArmAt    []float64  // the armed requests, as fractions of the window
	// ArmEvery, when positive, arms every ArmEvery-th hit of the window
	// as well (the 3rd, 6th...): a share of the requests, whatever the
	// window's size, where ArmAt places a count of them.
	ArmEvery int
	Hooks    []Hook
	// StallBound: a run with no progress for longer than this after its
	// first fault (or after a Hook's recovery, Then) is stopped and
	// judged DEADLOCK; 0: never.
	StallBound time.Duration
	Expected   string // the ladder's verdict, for the row ("": none)
}

// Hook is an action beside the load, fired once when the run hands out
// the hit at fraction At of its window. Its fault counts (the stall is
// measured from the first) once Do returns; Then, if set, runs next, still
// beside the load (the stack's recovery within the run: a server started
// again), and the stall is measured from its end instead. An error from
// either fails the run, but one from Do that wraps ErrNotStruck: then its
// fault never struck, and the run fails only if more hooks missed so than
// its armed requests never did their business (ErrNotStruck).
type Hook struct {
	At    float64
	About string
	Do    func(ctx context.Context) error
	Then  func(ctx context.Context) error
	// Outlast, if positive, holds back the last Outlast of the run's
	// hits (a fraction of all n, at least one, always after At's) until Do
	// has returned: a fault whose Do waits on the stack (the holder to
	// kill must first get the lock) then strikes while the load still has
	// requests to send, however long it took, and those requests show
	// what the fault did.
	Outlast float64
}

// ErrNotStruck is what a Hook's Do returns (wrapped) when its fault found
// nothing to strike because the armed request it waits for never did its
// business under the lock: under load an armed request may wait out its
// try= bound and answer 503, or wait for the lock while the others sell
// the rest and find no stock (409 sold out), and then, say, no holder's
// session is there to cut. Such a miss is the armed request's, not a
// failed staging, as long as there are as many such answers among the
// armed requests as misses.
var ErrNotStruck = errors.New("the fault found nothing to strike")

// load places s's armed hits and hooks in a run of n requests on stock.
func (s Shape) load(n, stock int) *load {
	ld := &load{
		scenario:   s.Scenario,
		every:      s.Every,
		armed:      s.Armed,
		armAt:      hitsAt(s.ArmAt, s.ArmEvery, n, stock),
		stallBound: s.StallBound,
		expected:   s.Expected,
	}
	for _, h := range s.Hooks {
		at := hitsAt([]float64{h.At}, 0, n, stock)
		if len(at) == 0 {
			continue
		}
		rh := runHook{at: at[0], about: h.About, do: h.Do, then: h.Then}
		if h.Outlast > 0 {
			from := n - max(1, int(h.Outlast*float64(n)))
			rh.holdFrom = uint64(max(from, int(at[0])+1))
			rh.done = make(chan struct{})
		}
		ld.hooks = append(ld.hooks, rh)
	}
	return ld
}

// load is a Shape placed in a run: the armed hits and the hooks by hit
// index. A nil *load is a plain run: scenario "normal", nothing armed.
type load struct {
	scenario   string
	every      url.Values // on every request (work=5ms)
	armed      url.Values // added to every on the armed hits (fault=crash)
	armAt      []uint64   // the armed hits, by 0-based index
	hooks      []runHook
	stallBound time.Duration // 0: never stop early, never DEADLOCK
	expected   string        // the ladder's verdict, for the row
	// settle, if set, waits until the stack is whole again (a crashed
	// instance restarted): before the reset and before the read-back.
	settle func(ctx context.Context) error
}

// runHook is an action fired once, when hit number at is handed out.
// With done set, hits from holdFrom on are handed out only once done is
// closed (do has returned).
type runHook struct {
	at       uint64
	about    string
	do       func(ctx context.Context) error
	then     func(ctx context.Context) error
	holdFrom uint64
	done     chan struct{}
}

func (l *load) name() string {
	if l == nil || l.scenario == "" {
		return ScenarioNormal
	}
	return l.scenario
}

// faulty reports whether the run injects faults: then the stall is measured
// from the first of them, else from the start of the run.
func (l *load) faulty() bool { return l != nil && (len(l.armAt) > 0 || len(l.hooks) > 0) }

func (l *load) wait(ctx context.Context) error {
	if l == nil || l.settle == nil {
		return nil
	}
	return l.settle(ctx)
}

func (l *load) expect() string {
	if l == nil {
		return ""
	}
	return l.expected
}

func (l *load) bound() time.Duration {
	if l == nil {
		return 0
	}
	return l.stallBound
}

// hitsAt turns fractions of a run's window, and every every-th hit of it
// (none when every is 0), into distinct 0-based hit indices below n, in
// order. The window is min(n, stock): a sale only
// reaches its read-modify-write (where work= and fault=pause strike) while
// there is stock, and the first stock hits are sure to find some.
func hitsAt(fractions []float64, every, n, stock int) []uint64 {
	window := min(n, stock)
	seen := map[uint64]bool{}
	var out []uint64
	add := func(i int) {
		i = max(0, min(i, n-1))
		if n > 0 && !seen[uint64(i)] {
			seen[uint64(i)] = true
			out = append(out, uint64(i))
		}
	}
	for _, f := range fractions {
		add(int(f * float64(window)))
	}
	for i := every - 1; every > 0 && i < window; i += every {
		add(i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// loadTargeter hands out the run's targets. vegeta calls it from every
// worker at once; the hit index comes from one atomic counter, so each
// index 0..n-1 is handed out exactly once and the armed ones are exactly
// those planned, whatever the interleaving.
type loadTargeter struct {
	// plain and armedTargets hold one target per item (one, without sku=, for
	// the lab's item): hit i goes to item i mod len(plain).
	plain, armedTargets []vegeta.Target
	armAt               map[uint64]bool
	hooks               map[uint64][]runHook
	holds               []runHook         // the hooks that hold the run's last hits back
	item                map[string]string // each target's item, by URL
	armedURL            map[string]bool

	next  atomic.Uint64
	start time.Time
	fault atomic.Int64 // 1 + time of the first fault since start; 0: none yet
	// recovering counts the hooks' recoveries (Then) under way, and
	// recovered is 1 + when the last one ended (0: none yet).
	recovering atomic.Int32
	recovered  atomic.Int64

	// armedAbout is the armed parameters, for Row.Faults.
	armedAbout string

	ctx      context.Context
	armed    *armedTrack // the armed requests handed out and answered
	wg       sync.WaitGroup
	mu       sync.Mutex
	hookErrs []error
	missed   []error // the hooks whose Do returned ErrNotStruck
	hooksRun []Fault // the hooks done, for Row.Faults
}

// newLoadTargeter builds the targets of lock on endpoint at base, one per
// item of skus (nil: the lab's item); wait, if set, goes on every request
// (an armed request may override it), and so does header (nil: none).
func newLoadTargeter(ctx context.Context, base, endpoint, lock, wait string, skus []string, header http.Header, ld *load) *loadTargeter {
	t := &loadTargeter{ctx: ctx, start: time.Now(), item: map[string]string{}, armedURL: map[string]bool{}, armed: newArmedTrack()}
	t.ctx = context.WithValue(ctx, armedKey{}, t.armed)
	if len(skus) == 0 {
		skus = []string{""}
	}
	for _, sku := range skus {
		target := func(extra ...url.Values) vegeta.Target {
			q := url.Values{"lock": {lock}}
			if wait != "" {
				q.Set("wait", wait)
			}
			if sku != "" {
				q.Set("sku", sku)
			}
			for _, e := range extra {
				for k, vs := range e {
					q[k] = append([]string(nil), vs...)
				}
			}
			tgt := vegeta.Target{Method: loadMethod, URL: base + "/" + endpoint + "?" + q.Encode(), Header: header}
			t.item[tgt.URL] = sku
			return tgt
		}
		if ld == nil {
			t.plain = append(t.plain, target())
			continue
		}
		t.plain = append(t.plain, target(ld.every))
		armed := target(ld.every, ld.armed)
		t.armedTargets = append(t.armedTargets, armed)
		t.armedURL[armed.URL] = true
	}
	if ld == nil {
		return t
	}
	t.armedAbout = ld.armed.Encode()
	t.armAt = make(map[uint64]bool, len(ld.armAt))
	for _, i := range ld.armAt {
		t.armAt[i] = true
	}
	t.hooks = make(map[uint64][]runHook, len(ld.hooks))
	for _, h := range ld.hooks {
		t.hooks[h.at] = append(t.hooks[h.at], h)
		if h.done != nil {
			t.holds = append(t.holds, h)
		}
	}
	return t
}

// isArmed reports whether a request to url carried the armed parameters.
func (t *loadTargeter) isArmed(url string) bool {
	return len(t.armAt) > 0 && t.armedURL[url]
}

// target is the vegeta.Targeter.
func (t *loadTargeter) target(tgt *vegeta.Target) error {
	i := t.next.Add(1) - 1
	for _, h := range t.holds {
		if i >= h.holdFrom {
			select {
			case <-h.done:
			case <-t.ctx.Done():
				return t.ctx.Err()
			}
		}
	}
	item := i % uint64(len(t.plain))
	if t.armAt[i] {
		*tgt = t.armedTargets[item]
		t.armed.sent()
		t.faulted()
	} else {
		*tgt = t.plain[item]
	}
	for _, h := range t.hooks[i] {
		t.fire(h)
	}
	return nil
}

// fire runs a hook beside the load; its fault counts once it is done.
func (t *loadTargeter) fire(h runHook) {
	t.wg.Go(func() {
		fail := func(err error) {
			t.mu.Lock()
			t.hookErrs = append(t.hookErrs, fmt.Errorf("%s: %w", h.about, err))
			t.mu.Unlock()
		}
		began := time.Since(t.start)
		err := h.do(t.ctx)
		if h.done != nil {
			close(h.done) // on an error too: the run fails, the held hits go
		}
		if errors.Is(err, ErrNotStruck) {
			t.mu.Lock()
			t.missed = append(t.missed, fmt.Errorf("%s: %w", h.about, err))
			t.mu.Unlock()
			return
		}
		if err != nil {
			fail(err)
			return
		}
		if h.then != nil {
			t.recovering.Add(1) // before the fault counts: no stall is measured until it is over
		}
		t.faulted()
		t.mu.Lock()
		t.hooksRun = append(t.hooksRun, Fault{About: h.about, Hook: true, Call: int64(began), Return: int64(time.Since(t.start))})
		t.mu.Unlock()
		if h.then != nil {
			err := h.then(t.ctx)
			t.recovered.Store(int64(time.Since(t.start)) + 1)
			t.recovering.Add(-1)
			if err != nil {
				fail(err)
			}
		}
	})
}

// wait waits for the hooks fired and returns their first error; with
// gaveUp armed requests that never did their business (a 503, a 409 sold
// out), the hooks that found nothing to strike fail the run only when
// they are more. armed is what the armed requests answered, for the
// error.
func (t *loadTargeter) wait(gaveUp int, armed map[string]int) error {
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.hookErrs) > 0 {
		return t.hookErrs[0]
	}
	if len(t.missed) > gaveUp {
		return fmt.Errorf("%d hooks found nothing to strike, and only %d armed requests gave up (503, or 409 sold out; the armed answered %v): %w", len(t.missed), gaveUp, armed, t.missed[0])
	}
	return nil
}

// hookFaults are the hooks done, once wait has returned.
func (t *loadTargeter) hookFaults() []Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.hooksRun)
}

func (t *loadTargeter) faulted() {
	t.fault.CompareAndSwap(0, int64(time.Since(t.start))+1)
}

// faultAt returns where the stall is measured from, since start: when
// the first fault struck, or when the last recovery (a Hook's Then) ended
// if later; false before the first fault and while a recovery is under
// way. A server started again takes its own time to come up, longer on a
// loaded machine, and a rung cannot serve before it is up: what the
// stall bound judges is whether the rung serves again once its server
// is back, not how fast the machine starts the server.
func (t *loadTargeter) faultAt() (time.Duration, bool) {
	v := t.fault.Load()
	if v == 0 || t.recovering.Load() > 0 {
		return 0, false
	}
	return time.Duration(max(v, t.recovered.Load()) - 1), true
}
