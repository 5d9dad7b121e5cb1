// Package handlers is the gin web app: /sale and /testLock under a lock
// chosen per request, plus the endpoints that reset and read the inventory.
// Handlers hold the narrow interfaces they need; main and the tests build
// the same router with New.
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/number"
	"github.com/lockladder/lockladder/internal/origin"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// Inventory is the state the handlers read and change: one store per
// item (sku "" for the lab's item) in one Redis, in the lab's scope or a
// run's (scope "run12": package guard).
type Inventory interface {
	ItemIn(scope, sku string) *inventory.Store
	Ping(ctx context.Context) error
}

// Optimistic is the database store of the db-optimistic rung: its own
// stock, sold and num, changed by compare-and-set on a version; one row
// for the lab (scope "") and one for each run's scope.
type Optimistic interface {
	SellOptimistic(ctx context.Context, scope string, line bool) (int64, error)
	IncrOptimistic(ctx context.Context, scope string, line bool) (int64, error)
	Snapshot(ctx context.Context, scope string) (inventory.Snapshot, error)
	Reset(ctx context.Context, scope string, stock int64) error
	Drop(ctx context.Context, scopes ...string) error
}

// Ladder finds a lock strategy by name.
type Ladder interface {
	Lookup(name string) (lock.Info, lock.Locker, bool)
	Rungs() []lock.Info
	Names() []string
}

// Config wires the router.
type Config struct {
	Instance  string // answered in X-Instance and in bodies
	Inventory Inventory
	// Optimistic is the database store of the rungs whose Info.Store is
	// "mariadb"; nil when the instance has no database (those rungs are
	// unavailable then).
	Optimistic Optimistic
	Ladder     Ladder
	Log        *slog.Logger
	// OpTimeout bounds the Redis work once the lock is held, and /stock,
	// /reset and /healthz. Default 5s.
	OpTimeout time.Duration
	// MaxStock is the largest stock /reset accepts. Default 1,000,000.
	MaxStock int64
	// MaxSKUs is the most items /reset?skus=K sets. Default
	// inventory.MaxSKUs.
	MaxSKUs int
	// Sections records the critical sections this instance held, for
	// GET /sections. Default: the latest 65,536.
	Sections *contract.Recorder
	// Faults, when not nil, lets requests arm faults (work=, fault=,
	// pause=; see package fault) that act through these actions. nil
	// refuses every fault parameter with a 400.
	Faults *FaultActions
	// FaultKey, when set, lets only the requests that carry it in
	// contract.HeaderFaultKey arm faults (Faults must be set too): the
	// stack's own runs, on a stack that also serves anyone who browses
	// to it. "": any request may, as Faults says.
	FaultKey string
	// Addr is the instance's listen address: a request's Host may name
	// its host (unless it is every interface, 0.0.0.0 or ::), on any
	// port, as it may name loopback (localhost, 127.0.0.0/8, ::1).
	Addr string
	// Hosts are the other names a request's Host may give, on any port
	// (origin.ParseHosts reads the app's -hosts): the service names of a
	// compose deployment, say. Any other Host is refused 421: a name of
	// someone else's resolving here is DNS rebinding (package origin).
	Hosts []string
	// Redis is the main Redis again, for what the app keeps beside the
	// inventory: the run guard (package guard; /guard, and /reset
	// refused while another run holds it) and the items that exist
	// (at most MaxItems). nil: neither, /reset unguarded and items
	// unbounded (tests of other things).
	Redis redis.Cmdable
	// RunKey is the key a caller shows (guard.KeyHeader) to take, renew
	// or release the run guard: the stack's Redis password, which only
	// the stack's owner reads. "": /guard only says who holds it, and
	// the app takes no guard (a run goes on without one).
	RunKey string
	// GuardTTL is the run guard's lease. Default guard.DefaultTTL.
	GuardTTL time.Duration
	// MaxItems is the most items (sku=) that may exist at once.
	// Default DefaultMaxItems.
	MaxItems int
}

// New builds the router.
func New(cfg Config) *gin.Engine {
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	if cfg.MaxStock <= 0 {
		cfg.MaxStock = 1_000_000
	}
	if cfg.MaxSKUs <= 0 {
		cfg.MaxSKUs = inventory.MaxSKUs
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sections == nil {
		cfg.Sections = contract.NewRecorder(1 << 16)
	}
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = DefaultMaxItems
	}
	h := &handler{cfg: cfg, m: newMetrics(cfg.Ladder), hosts: origin.NewHosts(cfg.Addr, cfg.Hosts)}
	if cfg.Redis != nil {
		h.guard = guard.NewStore(cfg.Redis, cfg.GuardTTL)
		h.items.registry = cfg.Redis
	}

	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false // /sale/ is a 404, not a redirect a client may follow to sell
	r.Use(h.instanceHeader, h.recover)
	r.Use(h.origin) // nothing for another site, nor for a host not the lab's
	r.Use(limits(MaxBodyBytes, MaxURIBytes))
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": "no such endpoint: " + c.Request.URL.Path, "reason": ReasonNotFound})
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{
			"reason": ReasonMethodNotAllowed,
			"error": fmt.Sprintf("method %s not allowed on %s (allowed: %s)",
				c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")),
		})
	})

	h.pageRoutes(r)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r.Handle(m, "/sale", h.sale)
		r.Handle(m, "/testLock", h.testLock)
	}
	r.GET("/stock", h.stock)
	r.POST("/reset", h.reset)
	r.GET("/healthz", h.healthz)
	r.GET("/strategies", h.strategies)
	r.GET("/sections", h.sections)
	r.GET("/lock", h.lockState)
	r.GET("/metrics", h.m.serve())
	h.guardRoutes(r)
	return r
}

type handler struct {
	cfg   Config
	m     *metrics
	hosts origin.Hosts // what a request's Host may name
	items items        // the items seen to exist
	guard *guard.Store // nil: none
	view  guardView    // the guard as this instance last read it
}

func (h *handler) instanceHeader(c *gin.Context) {
	c.Header("X-Instance", h.cfg.Instance)
	c.Next()
}

func (h *handler) recover(c *gin.Context) {
	defer func() {
		if v := recover(); v != nil {
			h.cfg.Log.Error("panic", "path", c.Request.URL.Path, "panic", v)
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal error", "reason": ReasonInternal})
		}
	}()
	c.Next()
}

// stock reads the stock, sold and num of item ?sku=ID (the lab's item
// without it; 404 for an item /reset never made) in ?lock=NAME's store
// (Redis's without lock=): in the run's scope with a run's token
// (guard.Header), and only while the run holds the guard.
func (h *handler) stock(c *gin.Context) {
	q, ok := h.query(c, "lock", "sku")
	if !ok {
		return
	}
	var rung *lock.Info
	if q.Has("lock") {
		r, _, ok := h.rung(c, q)
		if !ok {
			return
		}
		rung = &r
	}
	sku, ok := h.sku(c, q, rung)
	if !ok {
		return
	}
	scope, ok := h.admitReset(c, true)
	if !ok || !h.itemExists(c, scope, sku, "", contract.ReasonUnavailable) {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	snapshot := h.cfg.Inventory.ItemIn(scope, sku).Snapshot
	if rung != nil {
		if rung.Store == lock.StoreMariaDB {
			if h.cfg.Optimistic == nil {
				h.serverMissing(c, *rung, rung.Unavailable)
				return
			}
			snapshot = func(ctx context.Context) (inventory.Snapshot, error) { return h.cfg.Optimistic.Snapshot(ctx, scope) }
		}
	}
	s, err := snapshot(ctx)
	if err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error(), "reason": contract.ReasonUnavailable})
		return
	}
	c.JSON(http.StatusOK, s)
}

// reset sets the stock and zeroes sold and num: of the lab's item in
// every store (Redis's, and the database's when the instance has one); or
// of item ?sku=ID; or of items "1" to "K" with ?skus=K. It is what makes
// an item: /sale, /testLock and /stock know no other (itemExists), and
// at most MaxItems exist at once (makeItems). While a run holds the run
// guard, only its own resets pass (admitReset): any other is a 409. A
// run's resets (its token) make its items in its scope, apart from the
// lab's.
func (h *handler) reset(c *gin.Context) {
	q, ok := h.query(c, "stock", "sku", "skus")
	if !ok {
		return
	}
	stock, err := number.Whole("stock", q.Get("stock"), 0, h.cfg.MaxStock)
	if err != nil {
		h.badParam(c, err)
		return
	}
	sku, ok := h.sku(c, q, nil)
	if !ok {
		return
	}
	skus := []string{sku}
	if q.Has("skus") {
		if q.Has("sku") {
			h.badRequest(c, "give sku= (one item) or skus= (items 1 to K), not both")
			return
		}
		k, err := number.Whole("skus", q.Get("skus"), 1, int64(h.cfg.MaxSKUs))
		if err != nil {
			h.badParam(c, err)
			return
		}
		skus = inventory.SKUs(int(k))
	}
	scope, ok := h.admitReset(c, false)
	if !ok || !h.makeItems(c, scope, skus) {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	for _, sku := range skus {
		if err := h.cfg.Inventory.ItemIn(scope, sku).Reset(ctx, stock); err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": err.Error(), "reason": contract.ReasonUnavailable})
			return
		}
		if sku != "" {
			h.items.remember(scope, sku)
		}
	}
	if h.cfg.Optimistic != nil && skus[0] == "" {
		if err := h.cfg.Optimistic.Reset(ctx, scope, stock); err != nil {
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": "mariadb: " + err.Error(), "reason": contract.ReasonUnavailable})
			return
		}
	}
	if q.Has("skus") {
		c.JSON(http.StatusOK, gin.H{"stock": stock, "sold": 0, "num": 0, "skus": len(skus)})
		return
	}
	c.JSON(http.StatusOK, inventory.Snapshot{Stock: stock})
}

func (h *handler) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), time.Second)
	defer cancel()
	if err := h.cfg.Inventory.Ping(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "redis unreachable", "instance": h.cfg.Instance, "error": err.Error(),
			"reason": contract.ReasonUnavailable})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok", "instance": h.cfg.Instance})
}

// MaxSections is the most sections GET /sections answers at once, and
// how many without limit=: about 1.5 MB of JSON.
const MaxSections = 10_000

// sections answers the critical sections this instance held since
// ?since= (Unix nanoseconds; default all it keeps), the earliest acquired
// first, at most ?limit= (default and most MaxSections), and those it is
// inside now (holding, Released 0). complete is false when it has
// forgotten some; next, when the limit left some out, is the since= that
// asks for them.
func (h *handler) sections(c *gin.Context) {
	q, ok := h.query(c, "since", "limit")
	if !ok {
		return
	}
	var since int64
	if q.Has("since") {
		n, err := number.Whole("since", q.Get("since"), 0, math.MaxInt64)
		if err != nil {
			h.badParam(c, err)
			return
		}
		since = n
	}
	limit := int64(MaxSections)
	if q.Has("limit") {
		n, err := number.Whole("limit", q.Get("limit"), 1, MaxSections)
		if err != nil {
			h.badParam(c, err)
			return
		}
		limit = n
	}
	p := h.cfg.Sections.Since(since, int(limit))
	if p.Sections == nil {
		p.Sections = []contract.Section{}
	}
	body := gin.H{"instance": h.cfg.Instance, "complete": p.Complete, "sections": p.Sections,
		"holding": h.cfg.Sections.Holding()}
	if p.Next != 0 {
		body["next"] = p.Next
	}
	c.JSON(http.StatusOK, body)
}

func (h *handler) strategies(c *gin.Context) {
	c.JSON(http.StatusOK, h.cfg.Ladder.Rungs())
}
