package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/report"
)

// loadMethod is the method of the load requests. The contract accepts GET
// and POST on /sale and /testLock; ab sends GET, but a sale is not
// idempotent and both layers under us replay a GET on their own: Go's
// transport resends a GET whose reused connection fails before the first
// answer byte (the app may already have sold), and nginx by default passes
// a failed GET to the next upstream (proxy_next_upstream) but not a POST.
// A replayed sale would make a safe lock look oversold, so the load is POST.
const loadMethod = http.MethodPost

// progressEvery is how often the live progress line is redrawn.
const progressEvery = 200 * time.Millisecond

// drainGrace bounds the wait for the requests in flight after a run is
// stopped for stalling: past it their connections are cut.
const drainGrace = 10 * time.Second

// closedLoop is a vegeta Pacer that never waits and stops after n hits.
// With Workers == MaxWorkers the attacker hands each hit to an idle worker
// and blocks while all are busy, so this is ab's closed loop: at most
// Concurrency requests in flight, exactly n sent.
type closedLoop struct{ n uint64 }

func (p closedLoop) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= p.n
}

func (closedLoop) Rate(time.Duration) float64 { return 0 }

var _ vegeta.Pacer = closedLoop{}

// attack is one run's load in flight: the vegeta attacker on connections
// of its own, the targets it hands out, and what the answers add up to.
type attack struct {
	row      *Row
	attacker *vegeta.Attacker
	dial     *dialer
	tg       *loadTargeter
	watch    stallWatch

	// m counts the outcomes by status (row.Requests, OK and Codes are read
	// from it at the end) and the latencies; record adds only what vegeta
	// does not keep: the instances, the armed outcomes, the stall.
	m vegeta.Metrics
	// The requests as history: times and codes as they come; what the
	// bodies say is read after the run, off the clock of the load (the
	// client shares the machine with the app).
	ops    []history.Op
	bodies [][]byte
	last   time.Duration // when the last answer came, since the start

	onProgress func(Snapshot) // Config.OnProgress
	total      int            // requests the run sends

	// armedSoldOut counts the armed requests answered 409 sold out: they
	// found no stock under the lock, and so had no business for a fault
	// to strike (one that waited for the lock while the others sold the
	// rest).
	armedSoldOut int
}

// attack fires the run's load and fills the response-side fields of row.
// With a stall bound, it stops handing out requests once nothing has made
// progress for longer than the bound since the first fault, lets the
// requests in flight finish, and marks the row Stopped.
//
// It returns every request as a history operation, in the order the
// answers came.
func (h *harness) attack(ctx context.Context, row *Row, p *Progress, ld *load) ([]history.Op, error) {
	row.Wait = h.waitFor(row.Lock)
	a := h.newAttack(ctx, row, ld)
	defer a.dial.closeAll()
	results := a.attacker.Attack(a.tg.target, closedLoop{n: uint64(h.cfg.Requests)}, 0, row.Lock+"/"+row.Endpoint)
	cancelled := a.collect(ctx, results, p)
	return a.finish(ctx, cancelled, h.cfg.Requests, ld)
}

// newAttack readies the load of a run of row's lock and endpoint. The
// attacker gets a transport of our own (vegeta's options below still
// configure it) so that the run can close its connections: on
// cancellation, and afterwards so that idle keep-alive connections do not
// pile up run after run.
func (h *harness) newAttack(ctx context.Context, row *Row, ld *load) *attack {
	n, c := h.cfg.Requests, h.cfg.Concurrency
	d := newDialer(h.cfg.Timeout, h.cfg.AllowRemote)
	header := http.Header{}
	if h.cfg.FaultKey != "" {
		header.Set(contract.HeaderFaultKey, h.cfg.FaultKey)
	}
	if t := h.lease.Token(); t != "" {
		header.Set(guard.Header, t) // the run's own requests pass the guard
	}
	// The hooks beside the load get the run's lease: a request of their
	// own to the run's item passes the guard (guard.TokenOf), and its
	// keys are in the run's scope (guard.ScopeOf).
	tg := newLoadTargeter(guard.WithLease(ctx, h.lease), h.cfg.URL, row.Endpoint, row.Lock, row.Wait, h.skus(), header, ld)
	row.Instances = map[string]int{}
	row.Began = tg.start
	row.Planned = n
	return &attack{
		row:        row,
		dial:       d,
		tg:         tg,
		onProgress: h.cfg.OnProgress,
		total:      n,
		attacker: vegeta.NewAttacker(
			vegeta.Client(&http.Client{Transport: d.transport(c)}),
			vegeta.Workers(uint64(c)),
			vegeta.MaxWorkers(uint64(c)),
			vegeta.Connections(c),
			vegeta.Timeout(h.cfg.Timeout),
			vegeta.KeepAlive(true),
			vegeta.Redirects(vegeta.NoFollow), // a redirect is counted, never chased
		),
		watch:  stallWatch{bound: ld.bound(), faulty: ld.faulty(), fault: tg.faultAt},
		ops:    make([]history.Op, 0, n),
		bodies: make([][]byte, 0, n),
	}
}

// collect takes every result until vegeta closes results, redrawing the
// progress line as it goes, stopping the run once it stalls past its
// bound, and cutting the requests in flight on cancellation. It reports
// whether the run was cancelled.
func (a *attack) collect(ctx context.Context, results <-chan *vegeta.Result, p *Progress) (cancelled bool) {
	var tick, check, drain <-chan time.Time
	if p.isLive() || a.onProgress != nil {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		tick = t.C
	}
	if a.watch.bound > 0 {
		t := time.NewTicker(a.watch.checkEvery())
		defer t.Stop()
		check = t.C
	}
	done := ctx.Done()
	for results != nil {
		select {
		case r, ok := <-results:
			if !ok {
				results = nil
				break
			}
			a.record(r)
		case <-check:
			if a.stalled() {
				// Send nothing more and let the requests in flight
				// finish (they are waiting for the lock, bounded by the
				// app's wait), within drainGrace.
				check = nil
				a.attacker.Stop()
				drain = time.After(drainGrace)
			}
		case <-drain:
			a.dial.closeAll()
			drain = nil
		case <-tick:
			p.update(int(a.m.Requests), a.m.StatusCodes["200"], time.Since(a.tg.start))
			if a.onProgress != nil {
				a.onProgress(a.snapshot())
			}
		case <-done:
			// Stop handing out hits and cut the requests in flight; keep
			// draining until vegeta closes the channel.
			a.attacker.Stop()
			a.dial.closeAll()
			done, cancelled = nil, true
		}
	}
	return cancelled
}

// record adds one answer to the run: to the metrics, to the history, to
// the count of the instance that answered a 200 and of the armed
// outcomes, and, when it came from inside the lock, to the stall watch.
func (a *attack) record(r *vegeta.Result) {
	a.last = time.Since(a.tg.start)
	a.m.Add(r)
	inst := r.Headers.Get("X-Instance")
	call := r.Timestamp.Sub(a.tg.start)
	a.ops = append(a.ops, history.Op{Call: int64(call), Return: int64(call + r.Latency), Instance: inst, Item: a.tg.item[r.URL], Code: int(r.Code)})
	a.bodies = append(a.bodies, r.Body)
	if r.Code == http.StatusOK {
		if inst == "" {
			inst = "unknown"
		}
		a.row.Instances[inst]++
	}
	if w, err := strconv.ParseFloat(r.Headers.Get(contract.HeaderLockWait), 64); err == nil && inst != "" {
		if a.row.MaxWaitMs == nil {
			a.row.MaxWaitMs = map[string]float64{}
		}
		a.row.MaxWaitMs[inst] = max(a.row.MaxWaitMs[inst], w)
	}
	if a.tg.isArmed(r.URL) {
		a.tg.armed.answer()
		if a.row.Armed == nil {
			a.row.Armed = map[string]int{}
		}
		a.row.Armed[codeKey(r.Code)]++
		if r.Code == http.StatusConflict && reasonOf(r.Body) == contract.ReasonSoldOut {
			a.armedSoldOut++
		}
		a.row.Faults = append(a.row.Faults, Fault{About: a.tg.armedAbout, Call: int64(call), Return: int64(call + r.Latency),
			Instance: r.Headers.Get("X-Instance"), Code: int(r.Code)})
	}
	if progressed(r.Code, r.Body) && !a.row.Stopped {
		a.watch.progress(a.last)
	}
}

// stalled reports whether the run has just stalled past its bound, and
// then marks the row Stopped with the stall counted up to now.
func (a *attack) stalled() bool {
	now := time.Since(a.tg.start)
	if a.row.Stopped || !a.watch.over(now) {
		return false
	}
	a.watch.end(now)
	a.row.Stopped = true
	a.row.StoppedMs = report.Ms(now)
	since := "the first fault"
	switch {
	case !a.watch.faulty:
		since = "the start"
	case a.tg.recovered.Load() > 0:
		since = "the fault's recovery (its server back)"
	}
	a.row.StopReason = fmt.Sprintf("no request got through the lock for %d ms after %s, past the scenario's bound of %d ms: the run stopped sending",
		a.watch.longest().Milliseconds(), since, a.watch.bound.Milliseconds())
	return true
}

// finish fills the row once vegeta is done: the outcomes, the stall, the
// rate and the latencies, and what each answer says. A run cancelled, a
// hook that failed or results missing make it an error.
func (a *attack) finish(ctx context.Context, cancelled bool, n int, ld *load) ([]history.Op, error) {
	row := a.row
	a.m.Close()
	row.Requests, row.OK, row.Codes = outcomes(a.m.StatusCodes)
	hookErr := a.tg.wait(row.Armed[codeKey(http.StatusServiceUnavailable)]+a.armedSoldOut, row.Armed)
	if cancelled {
		return nil, fmt.Errorf("cancelled after %d of %d requests: %w", row.Requests, n, context.Cause(ctx))
	}
	if hookErr != nil {
		return nil, fmt.Errorf("scenario %s: %w", ld.name(), hookErr)
	}
	row.Faults = append(row.Faults, a.tg.hookFaults()...)
	if !row.Stopped && row.Requests != n {
		return nil, fmt.Errorf("vegeta answered %d results for %d requests", row.Requests, n)
	}
	if !row.Stopped {
		a.watch.end(a.last)
	}
	row.StallMs = report.Ms(a.watch.longest())
	row.StallBoundMs = report.Ms(a.watch.bound)

	span := a.m.Duration + a.m.Wait
	row.DurationMs = report.Ms(span)
	if s := span.Seconds(); s > 0 {
		row.RPS = report.Round(float64(row.Requests)/s, 1)
	}
	row.P50Ms = report.Ms(a.m.Latencies.P50)
	row.P99Ms = report.Ms(a.m.Latencies.P99)
	row.MaxMs = report.Ms(a.m.Latencies.Max)
	for i := range a.ops {
		a.ops[i].Outcome, a.ops[i].Value = history.Classify(a.ops[i].Code, a.bodies[i])
	}
	return a.ops, nil
}

// codeKey names an outcome: the status, or "error" for a transport error.
func codeKey(code uint16) string {
	if code == 0 {
		return "error"
	}
	return strconv.Itoa(int(code))
}

// outcomes splits vegeta's count by status ("0" for a transport error)
// into the requests, the 200s and every other outcome by codeKey.
func outcomes(byStatus map[string]int) (requests, ok int, codes map[string]int) {
	codes = make(map[string]int, len(byStatus))
	for k, n := range byStatus {
		requests += n
		switch k {
		case "200":
			ok = n
		case "0":
			codes["error"] = n
		default:
			codes[k] = n
		}
	}
	return requests, ok, codes
}

// progressed reports whether an answer came from inside the critical
// section: a 200, or a 409 the business gave under the lock (sold out, a
// stale fencing token refused). Anything else (503 lock not had, a run
// guard's 409, 502, a transport error) is no progress.
func progressed(code uint16, body []byte) bool {
	if code == http.StatusOK {
		return true
	}
	if code != http.StatusConflict {
		return false
	}
	reason := reasonOf(body)
	return reason != contract.ReasonGuardLost && reason != contract.ReasonRunInProgress
}

// reasonOf is an answer's reason, "" when it gives none.
func reasonOf(body []byte) string {
	var a struct{ Reason string }
	_ = json.Unmarshal(body, &a) // a body that is not JSON gives none
	return a.Reason
}
