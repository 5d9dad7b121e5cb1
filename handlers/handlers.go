// Package handlers is the gin web app: /sale and /testLock under a lock
// chosen per request, plus the endpoints that reset and read the inventory.
// Handlers hold the narrow interfaces they need; main and the tests build
// the same router with New.
package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// Inventory is the state the handlers read and change.
type Inventory interface {
	Sell(ctx context.Context, then ...inventory.Then) (int64, error)
	SellAtomic(ctx context.Context) (int64, error)
	Incr(ctx context.Context, then ...inventory.Then) (int64, error)
	IncrAtomic(ctx context.Context) (int64, error)
	SellFenced(ctx context.Context, fenceKey string, token int64, then ...inventory.Then) (int64, error)
	IncrFenced(ctx context.Context, fenceKey string, token int64, then ...inventory.Then) (int64, error)
	Snapshot(ctx context.Context) (inventory.Snapshot, error)
	Reset(ctx context.Context, stock int64) error
	Ping(ctx context.Context) error
}

// Ladder finds a lock strategy by name.
type Ladder interface {
	Lookup(name string) (lock.Rung, lock.Locker, bool)
	Rungs() []lock.Rung
	Names() []string
}

// Config wires the router.
type Config struct {
	Instance  string // answered in X-Instance and in bodies
	Inventory Inventory
	Ladder    Ladder
	Log       *slog.Logger
	// OpTimeout bounds the Redis work once the lock is held, and /stock,
	// /reset and /healthz. Default 5s.
	OpTimeout time.Duration
	// MaxStock is the largest stock /reset accepts. Default 1,000,000.
	MaxStock int64
	// Sections records the critical sections this instance held, for
	// GET /sections. Default: the latest 65,536.
	Sections *contract.Recorder
	// Faults, when not nil, lets requests arm faults (work=, fault=,
	// pause=; see package fault) that act through these actions. nil
	// refuses every fault parameter with a 400.
	Faults *fault.Actions
}

// New builds the router.
func New(cfg Config) *gin.Engine {
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	if cfg.MaxStock <= 0 {
		cfg.MaxStock = 1_000_000
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sections == nil {
		cfg.Sections = contract.NewRecorder(1 << 16)
	}
	h := &handler{cfg: cfg}

	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false // /sale/ is a 404, not a redirect a client may follow to sell
	r.Use(h.instanceHeader, h.recover)
	r.Use(limits(MaxBodyBytes, MaxURIBytes))
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": "no such endpoint: " + c.Request.URL.Path})
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{
			"error": fmt.Sprintf("method %s not allowed on %s (allowed: %s)",
				c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")),
		})
	})

	r.GET("/", h.page)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r.Handle(m, "/sale", h.sale)
		r.Handle(m, "/testLock", h.testLock)
	}
	r.GET("/stock", h.stock)
	r.POST("/reset", h.reset)
	r.GET("/healthz", h.healthz)
	r.GET("/strategies", h.strategies)
	r.GET("/sections", h.sections)
	return r
}

type handler struct {
	cfg Config
}

func (h *handler) instanceHeader(c *gin.Context) {
	c.Header("X-Instance", h.cfg.Instance)
	c.Next()
}

func (h *handler) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			h.cfg.Log.Error("panic", "path", c.Request.URL.Path, "panic", v)
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error"})
		}
	}()
	c.Next()
}

// resource is what a request works on under a lock: the stock or num.
type resource struct {
	lockKey  string
	fenceKey string
	op       func(context.Context, ...inventory.Then) (int64, error)                // the non-atomic read-modify-write
	atomic   func(context.Context) (int64, error)                                   // the one-script ceiling
	fenced   func(context.Context, string, int64, ...inventory.Then) (int64, error) // op, checked against a fencing token
}

func (h *handler) stockResource() resource {
	inv := h.cfg.Inventory
	return resource{inventory.StockLock, inventory.StockFence, inv.Sell, inv.SellAtomic, inv.SellFenced}
}

func (h *handler) numResource() resource {
	inv := h.cfg.Inventory
	return resource{inventory.NumLock, inventory.NumFence, inv.Incr, inv.IncrAtomic, inv.IncrFenced}
}

// sale sells one item under the chosen lock.
func (h *handler) sale(c *gin.Context) {
	req, ok := h.lockRequest(c)
	if !ok {
		return
	}
	remaining, err := h.critical(c, req, h.stockResource())
	switch {
	case errors.Is(err, inventory.ErrSoldOut):
		c.JSON(http.StatusConflict, gin.H{"instance": h.cfg.Instance, "lock": req.rung.Name, "sold": false, "remaining": 0,
			"reason": contract.ReasonSoldOut})
	case errors.Is(err, inventory.ErrStaleToken):
		c.JSON(http.StatusConflict, gin.H{"instance": h.cfg.Instance, "lock": req.rung.Name, "sold": false, "error": err.Error(),
			"reason": contract.ReasonStaleToken})
	case err != nil:
		h.unavailable(c, req.rung, err)
	default:
		c.JSON(http.StatusOK, gin.H{"instance": h.cfg.Instance, "lock": req.rung.Name, "sold": true, "remaining": remaining})
	}
}

// testLock increments num under the chosen lock.
func (h *handler) testLock(c *gin.Context) {
	req, ok := h.lockRequest(c)
	if !ok {
		return
	}
	num, err := h.critical(c, req, h.numResource())
	switch {
	case errors.Is(err, inventory.ErrStaleToken):
		c.JSON(http.StatusConflict, gin.H{"instance": h.cfg.Instance, "lock": req.rung.Name, "error": err.Error(),
			"reason": contract.ReasonStaleToken})
	case err != nil:
		h.unavailable(c, req.rung, err)
	default:
		c.JSON(http.StatusOK, gin.H{"instance": h.cfg.Instance, "lock": req.rung.Name, "num": num})
	}
}

// lockRequest is a parsed /sale or /testLock request.
type lockRequest struct {
	rung    lock.Rung
	locker  lock.Locker
	reenter bool
	wait    lock.WaitMode // "" for the instance's default
	plan    fault.Plan
}

// lockRequest parses ?lock=NAME, reenter=, wait= and, on an instance with
// faults enabled, the fault parameters.
func (h *handler) lockRequest(c *gin.Context) (lockRequest, bool) {
	q, parsed := h.parseQuery(c)
	if !parsed {
		return lockRequest{}, false
	}
	allowed := []string{"lock", "reenter", "wait"}
	if h.cfg.Faults != nil {
		allowed = append(allowed, fault.Params...)
	} else {
		for _, p := range fault.Params {
			if q.Has(p) {
				h.badRequest(c, fmt.Sprintf("fault parameters (%s) are disabled on this instance: start it with -faults",
					strings.Join(fault.Params, ", ")))
				return lockRequest{}, false
			}
		}
	}
	if !h.checkQuery(c, q, allowed...) {
		return lockRequest{}, false
	}
	var ok bool
	var req lockRequest
	if req.rung, req.locker, ok = h.rung(c, q); !ok {
		return lockRequest{}, false
	}
	if v, has := q["reenter"]; has {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			h.badRequest(c, fmt.Sprintf("reenter: %q is not a boolean (use 1 or 0)", truncate(v[0], 32)))
			return lockRequest{}, false
		}
		req.reenter = b
	}
	if v, has := q["wait"]; has {
		m, err := lock.ParseWaitMode(v[0])
		if err != nil {
			h.badRequest(c, fmt.Sprintf("wait: unknown wait mode %q (valid: %v)", truncate(v[0], 32), lock.WaitModes))
			return lockRequest{}, false
		}
		if !slices.Contains(req.rung.Waits, m) {
			msg := fmt.Sprintf("wait=%s does not apply to lock %q: it takes no wait= (it does not poll a busy lock)", m, req.rung.Name)
			if len(req.rung.Waits) > 0 {
				msg = fmt.Sprintf("wait=%s does not apply to lock %q: it waits by %v", m, req.rung.Name, req.rung.Waits)
			}
			h.badRequest(c, msg)
			return lockRequest{}, false
		}
		req.wait = m
	}
	if h.cfg.Faults != nil {
		plan, err := fault.Parse(q)
		if err != nil {
			h.badRequest(c, err.Error())
			return lockRequest{}, false
		}
		req.plan = plan
	}
	return req, true
}

// critical runs the resource's operation under the request's lock, or its
// atomic script for the ceiling. Once the lock is held the business runs
// to its end even if the client goes away: stopping half way through a
// read-modify-write would teach nothing.
func (h *handler) critical(c *gin.Context, req lockRequest, res resource) (n int64, err error) {
	ctx := c.Request.Context()
	if req.reenter {
		// Both acquisitions below must belong to one owner, this request;
		// a single one needs none (Reentrant makes its own).
		ctx = lock.WithOwner(ctx, h.cfg.Instance+":"+uuid.NewString())
	}
	if req.wait != "" {
		ctx = lock.WithWait(ctx, req.wait)
	}
	if req.plan.Armed() {
		ctx = fault.With(ctx, req.plan.Injector(*h.cfg.Faults))
	}
	budget := h.cfg.OpTimeout + req.plan.Work + req.plan.Pause
	if req.rung.Atomic {
		ctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		return res.atomic(ctx)
	}

	held, err := req.locker.Obtain(ctx, res.lockKey)
	if err != nil {
		return 0, notHeld{err}
	}
	// The section as history sees it runs from here to the moment the
	// release is sent (or the pipeline carrying it): both ends on the
	// short side of the time the lock was really held.
	sec := contract.Section{Instance: h.cfg.Instance, Lock: req.rung.Name, Key: res.lockKey, Acquired: time.Now().UnixNano()}
	over := h.cfg.Sections.Hold(sec)
	fault.Inject(ctx, fault.Acquired)
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()

	// A lock that can release in the pipeline of the business's last
	// write does (one round trip for both); otherwise, or when the
	// business stops before its write (sold out, an error), it releases
	// on its own afterwards.
	release := func() error { sec.Released = time.Now().UnixNano(); return held.Release(bctx) }
	var then []inventory.Then
	if pr, ok := held.(lock.PipelineReleaser); ok && !req.reenter {
		then = append(then, func(p redis.Pipeliner) {
			sec.Released = time.Now().UnixNano()
			release = pr.ReleaseIn(bctx, p)
		})
	}
	var wrote bool
	defer func() {
		h.released(req.rung, res.lockKey, release())
		sec.Wrote = wrote
		over(sec)
	}()

	if req.reenter {
		// The articles' testReEnter: take the same lock again inside the
		// critical section. A reentrant lock counts up; any other waits
		// for itself until the wait bound.
		inner, err := req.locker.Obtain(ctx, res.lockKey)
		if err != nil {
			return 0, notHeld{fmt.Errorf("re-entering the lock it holds: %w", err)}
		}
		defer func() { h.released(req.rung, res.lockKey, inner.Release(bctx)) }()
	}
	if t, ok := held.(lock.Tokened); ok {
		sec.Token = t.Token()
		n, err = res.fenced(bctx, res.fenceKey, t.Token(), then...)
	} else {
		n, err = res.op(bctx, then...)
	}
	// Only a write that went through can do harm; a sold-out read, a
	// refused stale token or a failure before the write cannot.
	wrote = err == nil
	return n, err
}

// notHeld is a failure to take the lock: the business never ran, so
// nothing was written, whatever went wrong.
type notHeld struct{ error }

func (e notHeld) Unwrap() error { return e.error }

// released logs a release that failed: the lease had lapsed, or Redis.
func (h *handler) released(rung lock.Rung, key string, err error) {
	if err != nil {
		h.cfg.Log.Warn("release failed", "lock", rung.Name, "key", key, "err", err)
	}
}

func (h *handler) unavailable(c *gin.Context, rung lock.Rung, err error) {
	// The reason tells a client whether the request may have changed
	// anything: a lock not had did not; a Redis failure may have, after
	// its write reached Redis.
	msg, reason := err.Error(), contract.ReasonUnavailable
	switch {
	case errors.Is(err, lock.ErrNotObtained):
		msg, reason = fmt.Sprintf("lock %q not obtained in time: %v", rung.Name, err), contract.ReasonLockTimeout
	case errors.As(err, new(notHeld)):
		reason = contract.ReasonLockUnavailable
		h.cfg.Log.Error("taking the lock failed", "path", c.Request.URL.Path, "lock", rung.Name, "err", err)
	default:
		h.cfg.Log.Error("request failed", "path", c.Request.URL.Path, "lock", rung.Name, "err", err)
	}
	c.JSON(http.StatusServiceUnavailable, gin.H{"instance": h.cfg.Instance, "lock": rung.Name, "error": msg, "reason": reason})
}

func (h *handler) stock(c *gin.Context) {
	if _, ok := h.query(c); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	s, err := h.cfg.Inventory.Snapshot(ctx)
	if err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, s)
}

func (h *handler) reset(c *gin.Context) {
	q, ok := h.query(c, "stock")
	if !ok {
		return
	}
	stock, err := parseCount(q.Get("stock"), h.cfg.MaxStock)
	if err != nil {
		h.badRequest(c, "stock: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	if err := h.cfg.Inventory.Reset(ctx, stock); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, inventory.Snapshot{Stock: stock})
}

func (h *handler) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Second)
	defer cancel()
	if err := h.cfg.Inventory.Ping(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "redis unreachable", "instance": h.cfg.Instance, "error": err.Error()})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "instance": h.cfg.Instance})
}

// sections answers the critical sections this instance held since
// ?since= (Unix nanoseconds; default all it keeps), and those it is inside
// now (holding, Released 0). complete is false when it has forgotten some.
func (h *handler) sections(c *gin.Context) {
	q, ok := h.query(c, "since")
	if !ok {
		return
	}
	var since int64
	if v := q.Get("since"); v != "" || q.Has("since") {
		n, err := parseCount(v, math.MaxInt64)
		if err != nil {
			h.badRequest(c, "since: "+err.Error())
			return
		}
		since = n
	}
	secs, complete := h.cfg.Sections.Since(since)
	if secs == nil {
		secs = []contract.Section{}
	}
	c.JSON(http.StatusOK, gin.H{"instance": h.cfg.Instance, "complete": complete, "sections": secs,
		"holding": h.cfg.Sections.Holding()})
}

func (h *handler) strategies(c *gin.Context) {
	c.JSON(http.StatusOK, h.cfg.Ladder.Rungs())
}

// query returns the request's query parameters after checking them (see
// checkQuery).
func (h *handler) query(c *gin.Context, allowed ...string) (url.Values, bool) {
	q, ok := h.parseQuery(c)
	return q, ok && h.checkQuery(c, q, allowed...)
}

// parseQuery parses the request's query, answering a 400 when a pair does
// not parse (a bad %-escape, a ';' separator): URL.Query drops such a pair
// silently, and the request would go on without it.
func (h *handler) parseQuery(c *gin.Context) (url.Values, bool) {
	q, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		h.badRequest(c, "malformed query: "+err.Error())
		return nil, false
	}
	return q, true
}

// checkQuery answers a 400 unless q names only allowed parameters, each at
// most once.
func (h *handler) checkQuery(c *gin.Context, q url.Values, allowed ...string) bool {
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			want := "none"
			if len(allowed) > 0 {
				want = strings.Join(allowed, ", ")
			}
			h.badRequest(c, fmt.Sprintf("unknown parameter %q (allowed: %s)", k, want))
			return false
		}
		if len(vs) > 1 {
			h.badRequest(c, fmt.Sprintf("parameter %q given %d times", k, len(vs)))
			return false
		}
	}
	return true
}

// rung resolves ?lock=NAME.
func (h *handler) rung(c *gin.Context, q url.Values) (lock.Rung, lock.Locker, bool) {
	name := q.Get("lock")
	if name == "" {
		h.badRequest(c, "missing lock: say ?lock=NAME")
		return lock.Rung{}, nil, false
	}
	rung, locker, ok := h.cfg.Ladder.Lookup(name)
	if !ok {
		h.badRequest(c, fmt.Sprintf("unknown lock %q", truncate(name, 64)))
		return lock.Rung{}, nil, false
	}
	return rung, locker, true
}

func (h *handler) badRequest(c *gin.Context, msg string) {
	c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": msg, "locks": h.cfg.Ladder.Names()})
}

// parseCount parses a whole number in [0, max].
func parseCount(s string, max int64) (int64, error) {
	if s == "" {
		return 0, errors.New("missing: give a whole number")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", truncate(s, 32))
	}
	if n < 0 || n > max {
		return 0, fmt.Errorf("%d is out of range [0, %d]", n, max)
	}
	return n, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
