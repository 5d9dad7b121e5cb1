package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lockladder/lockladder/bench/history"
)

// progressEvery is how often the live progress line is redrawn.
const progressEvery = 200 * time.Millisecond

// harness talks to one load balancer: control requests (reset, stock,
// strategies) go through a small client, each run's load through its own
// vegeta attacker.
type harness struct {
	cfg    Config
	dial   *dialer
	client *http.Client
	waits  map[string][]string // the wait modes each lock takes; nil: unknown
}

func newHarness(cfg Config) *harness {
	d := newDialer(cfg.Timeout, cfg.AllowRemote)
	return &harness{
		cfg:  cfg,
		dial: d,
		client: &http.Client{
			Transport: d.transport(2),
			Timeout:   cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}
}

func (h *harness) close() { h.dial.closeAll() }

// counters is the body of GET /stock and POST /reset.
type counters struct {
	Stock *int64 `json:"stock"`
	Sold  *int64 `json:"sold"`
	Num   *int64 `json:"num"`
}

func (c counters) complete() bool { return c.Stock != nil && c.Sold != nil && c.Num != nil }

// call sends one control request, checks for a 200 and decodes the JSON body.
func (h *harness) call(ctx context.Context, method, path string, out any) error {
	return h.callURL(ctx, method, h.cfg.URL+path, out)
}

func (h *harness) callURL(ctx context.Context, method, target string, out any) error {
	path := strings.TrimPrefix(target, h.cfg.URL)
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: want 200, got %s: %s", method, path, resp.Status, snippet(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: bad JSON %s: %w", method, path, snippet(body), err)
	}
	return nil
}

// strategies asks GET /strategies for the lock names, in the app's order,
// and notes which wait modes each takes (waitFor).
func (h *harness) strategies(ctx context.Context) ([]string, error) {
	var list []struct {
		Name  string   `json:"name"`
		Waits []string `json:"waits"`
	}
	if err := h.call(ctx, http.MethodGet, "/strategies", &list); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	names := make([]string, 0, len(list))
	h.waits = make(map[string][]string, len(list))
	for _, s := range list {
		if s.Name != "" {
			names = append(names, s.Name)
			h.waits[s.Name] = s.Waits
		}
	}
	if len(names) == 0 {
		return nil, errors.New("bench: GET /strategies: the app lists no lock")
	}
	return names, nil
}

// waitFor is the wait= to send with lock's requests: Config.Wait where the
// lock takes it (GET /strategies says which do), else none, and the lock
// waits its own way.
func (h *harness) waitFor(lock string) string {
	if h.waits == nil || slices.Contains(h.waits[lock], h.cfg.Wait) {
		return h.cfg.Wait
	}
	return ""
}

// reset sets the stock and clears the counters; it returns the stock the
// app reports, which must be the one asked for.
func (h *harness) reset(ctx context.Context) (int64, error) {
	var c counters
	path := "/reset?stock=" + strconv.Itoa(h.cfg.Stock)
	if err := h.call(ctx, http.MethodPost, path, &c); err != nil {
		return 0, err
	}
	switch {
	case !c.complete():
		return 0, fmt.Errorf("POST %s: answer lacks stock, sold or num", path)
	case *c.Stock != int64(h.cfg.Stock) || *c.Sold != 0 || *c.Num != 0:
		return 0, fmt.Errorf("POST %s: want stock=%d sold=0 num=0, got stock=%d sold=%d num=%d",
			path, h.cfg.Stock, *c.Stock, *c.Sold, *c.Num)
	}
	return *c.Stock, nil
}

// stock reads the counters back.
func (h *harness) stock(ctx context.Context) (counters, error) {
	var c counters
	if err := h.call(ctx, http.MethodGet, "/stock", &c); err != nil {
		return c, err
	}
	if !c.complete() {
		return c, errors.New("GET /stock: answer lacks stock, sold or num")
	}
	return c, nil
}

// runOne is RunOne on a normalized config, with the requests shaped by ld
// (nil: a plain run).
func (h *harness) runOne(ctx context.Context, lock, endpoint string, p *progress, ld *load) (Row, error) {
	ep, err := normalizeEndpoint(endpoint)
	if err != nil {
		return Row{}, err
	}
	if strings.TrimSpace(lock) == "" {
		return Row{}, errors.New("bench: empty lock name")
	}
	row := Row{Scenario: ld.name(), Lock: lock, Endpoint: ep, Expected: ld.expect()}

	if err := ld.wait(ctx); err != nil {
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}
	initial, err := h.reset(ctx)
	if err != nil {
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}
	row.Initial = initial

	p.start(lock, ep, h.cfg.Requests)
	since := time.Now()
	ops, err := h.attack(ctx, &row, p, ld)
	if err != nil {
		p.fail(err)
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}

	if err := ld.wait(ctx); err != nil {
		p.fail(err)
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}
	c, err := h.stock(ctx)
	if err != nil {
		p.fail(err)
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}
	row.Remaining, row.Sold, row.Num = *c.Stock, *c.Sold, *c.Num
	row.ops, row.began = ops, since
	if err := h.checkHistory(ctx, &row, ops, since); err != nil {
		p.fail(err)
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}
	Judge(&row)

	// A 4xx other than 409 (out of stock) means the harness asked wrongly
	// (unknown lock, wrong method): the row would judge nothing.
	if code, n := rejected(row.Codes); n > 0 {
		err := fmt.Errorf("bench: %s/%s: the app rejected %d requests with %s: check the lock name and the URL", lock, ep, n, code)
		p.fail(err)
		return row, err
	}
	p.finish(row)
	return row, nil
}

// rejected returns the first 4xx code other than 409 in codes and its total.
func rejected(codes map[string]int) (first string, total int) {
	for _, k := range sortedCodes(codes) {
		if n, err := strconv.Atoi(k); err == nil && n >= 400 && n < 500 && n != http.StatusConflict {
			if first == "" {
				first = k
			}
			total += codes[k]
		}
	}
	return first, total
}

// loadMethod is the method of the load requests. The contract accepts GET
// and POST on /sale and /testLock; ab sends GET, but a sale is not
// idempotent and both layers under us replay a GET on their own: Go's
// transport resends a GET whose reused connection fails before the first
// answer byte (the app may already have sold), and nginx by default passes
// a failed GET to the next upstream (proxy_next_upstream) but not a POST.
// A replayed sale would make a safe lock look oversold, so the load is POST.
const loadMethod = http.MethodPost

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

// drainGrace bounds the wait for the requests in flight after a run is
// stopped for stalling: past it their connections are cut.
const drainGrace = 10 * time.Second

// attack fires the run's load and fills the response-side fields of row.
// With a stall bound, it stops handing out requests once nothing has made
// progress for longer than the bound since the first fault, lets the
// requests in flight finish, and marks the row Stopped.
//
// It returns every request as a history operation, in the order the
// answers came.
func (h *harness) attack(ctx context.Context, row *Row, p *progress, ld *load) ([]history.Op, error) {
	n, c := h.cfg.Requests, h.cfg.Concurrency

	// Our own transport (vegeta's options below still configure it) so that
	// the run can close its connections: on cancellation, and afterwards so
	// that idle keep-alive connections do not pile up run after run.
	d := newDialer(h.cfg.Timeout, h.cfg.AllowRemote)
	defer d.closeAll()
	a := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Transport: d.transport(c)}),
		vegeta.Workers(uint64(c)),
		vegeta.MaxWorkers(uint64(c)),
		vegeta.Connections(c),
		vegeta.Timeout(h.cfg.Timeout),
		vegeta.KeepAlive(true),
		vegeta.Redirects(vegeta.NoFollow), // a redirect is counted, never chased
	)
	row.Wait = h.waitFor(row.Lock)
	tg := newLoadTargeter(ctx, h.cfg.URL, row.Endpoint, row.Lock, row.Wait, ld)
	results := a.Attack(tg.target, closedLoop{n: uint64(n)}, 0, row.Lock+"/"+row.Endpoint)

	var tick <-chan time.Time
	if p.isLive() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		tick = t.C
	}
	bound := ld.bound()
	var check <-chan time.Time
	if bound > 0 {
		t := time.NewTicker(min(max(bound/30, 10*time.Millisecond), 100*time.Millisecond))
		defer t.Stop()
		check = t.C
	}
	var drain <-chan time.Time

	// from returns where the stall is measured from: the first fault when
	// the run injects faults (none yet: not measuring), else the start.
	faulty := ld.faulty()
	from := func() (time.Duration, bool) {
		if !faulty {
			return 0, true
		}
		return tg.faultAt()
	}
	var st stall

	// m counts the outcomes by status (row.Requests, OK and Codes are
	// read from it at the end) and the latencies; the loop adds only what
	// vegeta does not keep: the instances, the armed outcomes, the stall.
	var m vegeta.Metrics
	row.Instances = map[string]int{}
	started := tg.start
	var last time.Duration // when the last result came back
	// The requests as history: times and codes here; what the bodies say
	// is read after the run, off the clock of the load (the client shares
	// the machine with the app).
	ops := make([]history.Op, 0, n)
	bodies := make([][]byte, 0, n)
	done := ctx.Done()
	cancelled := false
	for results != nil {
		select {
		case r, ok := <-results:
			if !ok {
				results = nil
				break
			}
			last = time.Since(started)
			m.Add(r)
			inst := r.Headers.Get("X-Instance")
			call := r.Timestamp.Sub(started)
			ops = append(ops, history.Op{Call: int64(call), Return: int64(call + r.Latency), Instance: inst, Code: int(r.Code)})
			bodies = append(bodies, r.Body)
			if r.Code == http.StatusOK {
				if inst == "" {
					inst = "unknown"
				}
				row.Instances[inst]++
			}
			if tg.isArmed(r.URL) {
				if row.Armed == nil {
					row.Armed = map[string]int{}
				}
				row.Armed[codeKey(r.Code)]++
			}
			if progressed(row.Endpoint, r.Code) && !row.Stopped {
				f, ok := from()
				st.progress(last, f, ok)
			}
		case <-check:
			now := time.Since(started)
			if f, ok := from(); ok && !row.Stopped && st.current(now, f) > bound {
				// Stalled: send nothing more and let the requests in
				// flight finish (they are waiting for the lock, bounded
				// by the app's wait), within drainGrace.
				st.close(now, f, true)
				row.Stopped, check = true, nil
				a.Stop()
				drain = time.After(drainGrace)
			}
		case <-drain:
			d.closeAll()
			drain = nil
		case <-tick:
			p.update(int(m.Requests), m.StatusCodes["200"], time.Since(started))
		case <-done:
			// Stop handing out hits and cut the requests in flight; keep
			// draining until vegeta closes the channel.
			a.Stop()
			d.closeAll()
			done, cancelled = nil, true
		}
	}
	m.Close()
	row.Requests, row.OK, row.Codes = outcomes(m.StatusCodes)
	hookErr := tg.wait()
	if cancelled {
		return nil, fmt.Errorf("cancelled after %d of %d requests: %w", row.Requests, n, context.Cause(ctx))
	}
	if hookErr != nil {
		return nil, fmt.Errorf("scenario %s: %w", ld.name(), hookErr)
	}
	if !row.Stopped && row.Requests != n {
		return nil, fmt.Errorf("vegeta answered %d results for %d requests", row.Requests, n)
	}
	if !row.Stopped {
		f, ok := from()
		st.close(last, f, ok)
	}
	row.StallMs = ms(st.longest)
	row.StallBoundMs = ms(bound)

	span := m.Duration + m.Wait
	row.DurationMs = ms(span)
	if s := span.Seconds(); s > 0 {
		row.RPS = round(float64(row.Requests)/s, 1)
	}
	row.P50Ms = ms(m.Latencies.P50)
	row.P99Ms = ms(m.Latencies.P99)
	row.MaxMs = ms(m.Latencies.Max)
	for i := range ops {
		ops[i].Outcome, ops[i].Value = history.Classify(ops[i].Code, bodies[i])
	}
	return ops, nil
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
// section: a 200, or on /sale a 409, the sold-out answer the sale gives
// under the lock. Anything else (503 lock not had, 502, a transport error)
// is no progress.
func progressed(endpoint string, code uint16) bool {
	return code == http.StatusOK || (endpoint == EndpointSale && code == http.StatusConflict)
}

// ms converts d to milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// sortedCodes returns the keys of codes: numeric statuses ascending, then
// the rest ("error") alphabetically.
func sortedCodes(codes map[string]int) []string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		switch {
		case errA == nil && errB == nil:
			return a < b
		case errA == nil || errB == nil:
			return errA == nil
		default:
			return keys[i] < keys[j]
		}
	})
	return keys
}

// otherCell lists the non-200 outcomes, "409:4000 503:2 error:1", or "-".
func otherCell(codes map[string]int) string {
	var b strings.Builder
	for _, k := range sortedCodes(codes) {
		if codes[k] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, codes[k])
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
