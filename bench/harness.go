package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/report"
)

// harness talks to one load balancer: control requests (reset, stock,
// strategies) go through a small client, each run's load through its own
// vegeta attacker.
type harness struct {
	cfg    Config
	dial   *dialer
	client *http.Client
	waits  map[string][]string // the wait modes each lock takes; nil: unknown
	// unavailable says why the app cannot serve a lock (GET /strategies'
	// "unavailable": its server is missing).
	unavailable map[string]string
	// lease is the stack's run guard the runs hold (nil: none, the app
	// serves none); ownLease: hold took it, and close lets it go.
	lease    *guard.Lease
	ownLease bool
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

func (h *harness) close() {
	h.letGo()
	h.dial.closeAll()
}

// counters is the body of GET /stock and POST /reset.
type counters struct {
	Stock *int64 `json:"stock"`
	Sold  *int64 `json:"sold"`
	Num   *int64 `json:"num"`
	// Master is the Redis Cluster master that holds the item ("" on one
	// Redis).
	Master string `json:"master"`
}

func (c counters) complete() bool { return c.Stock != nil && c.Sold != nil && c.Num != nil }

// call sends one control request through the load balancer, checks for a
// 200 and decodes the JSON body. Every control request is idempotent (a
// read, or a reset to given values), so one that the load balancer could
// not deliver (a 502 or 504: an instance restarted after a crash is not
// back in its pool yet) is sent again, for at most controlRetry. A load
// balancer that does not answer at all is an error at once: no stack.
func (h *harness) call(ctx context.Context, method, path string, out any) error {
	deadline := time.Now().Add(controlRetry)
	for {
		err := h.callURL(ctx, method, h.cfg.URL+path, out)
		var ue undelivered
		if err == nil || !errors.As(err, &ue) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// controlRetry bounds call's retries.
const controlRetry = 5 * time.Second

// undelivered marks a control request the load balancer could not deliver.
type undelivered struct{ error }

func (u undelivered) Unwrap() error { return u.error }

func (h *harness) callURL(ctx context.Context, method, target string, out any) error {
	path := strings.TrimPrefix(target, h.cfg.URL)
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if t := h.lease.Token(); t != "" {
		req.Header.Set(guard.Header, t) // the run's own resets pass the guard
	}
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
		if lost := lostGuard(resp.StatusCode, body); lost != nil {
			// The run's token no longer counts: what it reads is not its own.
			return fmt.Errorf("%s %s: %w", method, path, lost)
		}
		err := fmt.Errorf("%s %s: want 200, got %s: %s", method, path, resp.Status, snippet(body))
		if resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout {
			return undelivered{err}
		}
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: bad JSON %s: %w", method, path, snippet(body), err)
	}
	return nil
}

// lostGuard is the app's 409 guard_lost, as a *guard.BusyError (Lost),
// nil for any other answer.
func lostGuard(code int, body []byte) error {
	var refusal struct {
		guard.Holder
		Reason string `json:"reason"`
	}
	if code != http.StatusConflict || json.Unmarshal(body, &refusal) != nil || refusal.Reason != guard.ReasonLost {
		return nil
	}
	return &guard.BusyError{Holder: refusal.Holder, Lost: true}
}

// strategies asks GET /strategies for the lock names, in the app's order,
// and notes which wait modes each takes (waitFor).
func (h *harness) strategies(ctx context.Context) ([]string, error) {
	var list []struct {
		Name        string   `json:"name"`
		Waits       []string `json:"waits"`
		Unavailable string   `json:"unavailable"`
	}
	if err := h.call(ctx, http.MethodGet, "/strategies", &list); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	names := make([]string, 0, len(list))
	h.waits = make(map[string][]string, len(list))
	h.unavailable = map[string]string{}
	for _, s := range list {
		if s.Name != "" {
			names = append(names, s.Name)
			h.waits[s.Name] = s.Waits
			if s.Unavailable != "" {
				h.unavailable[s.Name] = s.Unavailable
			}
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
	if h.cfg.SKUs > 0 {
		path += "&skus=" + strconv.Itoa(h.cfg.SKUs)
	}
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

// stock reads item sku's counters ("" for the lab's item) back from
// where lock keeps them (GET /stock?lock=NAME: Redis for most rungs, the
// database for db-optimistic).
func (h *harness) stock(ctx context.Context, lock, sku string) (counters, error) {
	var c counters
	q := url.Values{"lock": {lock}}
	if sku != "" {
		q.Set("sku", sku)
	}
	if err := h.call(ctx, http.MethodGet, "/stock?"+q.Encode(), &c); err != nil {
		return c, err
	}
	if !c.complete() {
		return c, errors.New("GET /stock: answer lacks stock, sold or num")
	}
	return c, nil
}

// runOne is RunOne on a normalized config, with the requests shaped by ld
// (nil: a plain run).
func (h *harness) runOne(ctx context.Context, lock, endpoint string, p *Progress, ld *load) (Row, error) {
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
	row.Ops = ops // row.Began is when the load started: their times count from it
	if h.cfg.SKUs > 0 {
		err = h.judgeItems(ctx, &row, ops, since)
	} else {
		err = h.judgeOne(ctx, &row, ops, since)
	}
	if err == nil {
		err = h.guardLost()
	}
	if err != nil {
		p.fail(err)
		return row, fmt.Errorf("bench: %s/%s: %w", lock, ep, err)
	}

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
	for _, k := range report.SortedCodes(codes) {
		if n, err := strconv.Atoi(k); err == nil && n >= 400 && n < 500 && n != http.StatusConflict {
			if first == "" {
				first = k
			}
			total += codes[k]
		}
	}
	return first, total
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
