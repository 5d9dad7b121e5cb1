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
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// Inventory is the state the handlers read and change.
type Inventory interface {
	Sell(ctx context.Context) (int64, error)
	SellAtomic(ctx context.Context) (int64, error)
	Incr(ctx context.Context) (int64, error)
	IncrAtomic(ctx context.Context) (int64, error)
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
	h := &handler{cfg: cfg}

	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(h.instanceHeader, h.recover)
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

// sale sells one item under the chosen lock.
func (h *handler) sale(c *gin.Context) {
	q, ok := h.query(c, "lock")
	if !ok {
		return
	}
	rung, locker, ok := h.rung(c, q)
	if !ok {
		return
	}
	remaining, err := h.critical(c, rung, locker, inventory.StockLock,
		h.cfg.Inventory.Sell, h.cfg.Inventory.SellAtomic)
	switch {
	case errors.Is(err, inventory.ErrSoldOut):
		c.JSON(http.StatusConflict, gin.H{"instance": h.cfg.Instance, "lock": rung.Name, "sold": false, "remaining": 0})
	case err != nil:
		h.unavailable(c, rung, err)
	default:
		c.JSON(http.StatusOK, gin.H{"instance": h.cfg.Instance, "lock": rung.Name, "sold": true, "remaining": remaining})
	}
}

// testLock increments num under the chosen lock.
func (h *handler) testLock(c *gin.Context) {
	q, ok := h.query(c, "lock")
	if !ok {
		return
	}
	rung, locker, ok := h.rung(c, q)
	if !ok {
		return
	}
	num, err := h.critical(c, rung, locker, inventory.NumLock,
		h.cfg.Inventory.Incr, h.cfg.Inventory.IncrAtomic)
	if err != nil {
		h.unavailable(c, rung, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"instance": h.cfg.Instance, "lock": rung.Name, "num": num})
}

// critical runs op under the rung's lock on key, or atomicOp for the
// atomic ceiling. Once the lock is held the business runs to its end even
// if the client goes away: stopping half way through a read-modify-write
// would teach nothing.
func (h *handler) critical(c *gin.Context, rung lock.Rung, locker lock.Locker, key string,
	op, atomicOp func(context.Context) (int64, error)) (int64, error) {
	if rung.Atomic {
		ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
		defer cancel()
		return atomicOp(ctx)
	}
	held, err := locker.Obtain(c.Request.Context(), key)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), h.cfg.OpTimeout)
	defer cancel()
	defer func() {
		if err := held.Release(ctx); err != nil {
			h.cfg.Log.Warn("release failed", "lock", rung.Name, "key", key, "err", err)
		}
	}()
	return op(ctx)
}

func (h *handler) unavailable(c *gin.Context, rung lock.Rung, err error) {
	msg := err.Error()
	if errors.Is(err, lock.ErrNotObtained) {
		msg = fmt.Sprintf("lock %q not obtained in time: %v", rung.Name, err)
	} else {
		h.cfg.Log.Error("request failed", "path", c.Request.URL.Path, "lock", rung.Name, "err", err)
	}
	c.JSON(http.StatusServiceUnavailable, gin.H{"instance": h.cfg.Instance, "lock": rung.Name, "error": msg})
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

func (h *handler) strategies(c *gin.Context) {
	c.JSON(http.StatusOK, h.cfg.Ladder.Rungs())
}

// query returns the request's query parameters after checking that it
// names only allowed ones, each at most once.
func (h *handler) query(c *gin.Context, allowed ...string) (queryValues, bool) {
	q := c.Request.URL.Query()
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			want := "none"
			if len(allowed) > 0 {
				want = strings.Join(allowed, ", ")
			}
			h.badRequest(c, fmt.Sprintf("unknown parameter %q (allowed: %s)", k, want))
			return nil, false
		}
		if len(vs) > 1 {
			h.badRequest(c, fmt.Sprintf("parameter %q given %d times", k, len(vs)))
			return nil, false
		}
	}
	return queryValues(q), true
}

// rung resolves ?lock=NAME.
func (h *handler) rung(c *gin.Context, q queryValues) (lock.Rung, lock.Locker, bool) {
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

type queryValues map[string][]string

func (q queryValues) Get(k string) string {
	if vs := q[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
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
