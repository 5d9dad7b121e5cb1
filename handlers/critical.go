package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/number"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// sale sells one item under the chosen lock.
func (h *handler) sale(c *gin.Context) {
	req, ok := h.lockRequest(c)
	if !ok || !h.admitItem(c, &req) {
		return
	}
	remaining, err := h.critical(c, req, true)
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
	if !ok || !h.admitItem(c, &req) {
		return
	}
	num, err := h.critical(c, req, false)
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
	rung    lock.Info
	locker  lock.Locker
	reenter bool
	wait    lock.WaitMode  // "" for the instance's default
	try     *time.Duration // nil for the instance's wait bound
	lease   time.Duration  // 0 for the instance's lease and watchdog
	sku     string         // "" for the lab's item
	scope   string         // the run's whose token it carries, "" for the lab's
	plan    plan
}

// admitItem lets req through the run guard (admitRun), into the scope
// of the run whose token it carries, and finds its item there (a 404
// when /reset never made it): last, once the request is known good,
// so that nothing is taken or written for an item that is not there.
func (h *handler) admitItem(c *gin.Context, req *lockRequest) bool {
	var ok bool
	if req.scope, ok = h.admitRun(c); !ok {
		return false
	}
	return h.itemExists(c, req.scope, req.sku, req.rung.Name, contract.ReasonLockUnavailable)
}

// Bounds of try= and lease=: what one request may make others wait. A
// request that holds a lock for its try and then dies leaves it for its
// lease; a few seconds each is all the scenarios ask (docs/scenarios.md:
// try=5s at most, no lease=).
const (
	maxTry   = 5 * time.Second
	minLease = 100 * time.Millisecond
	maxLease = 5 * time.Second
)

// lockRequest parses ?lock=NAME, sku=, reenter=, wait=, try=, lease= and, on an
// instance with faults enabled, the fault parameters.
func (h *handler) lockRequest(c *gin.Context) (lockRequest, bool) {
	q, parsed := h.parseQuery(c)
	if !parsed {
		return lockRequest{}, false
	}
	allowed := []string{"lock", "sku", "reenter", "wait", "try", "lease"}
	faults, why := h.faultsAllowed(c)
	if faults {
		allowed = append(allowed, faultParams...)
	} else {
		for _, p := range faultParams {
			if q.Has(p) {
				h.badRequest(c, fmt.Sprintf("fault parameters (%s) are %s", strings.Join(faultParams, ", "), why))
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
	if req.sku, ok = h.sku(c, q, &req.rung); !ok {
		return lockRequest{}, false
	}
	if v, has := q["reenter"]; has {
		b, err := strconv.ParseBool(v[0])
		if err != nil {
			h.badRequest(c, fmt.Sprintf("reenter: %q is not a boolean (use 1 or 0)", truncate(v[0], 32)))
			return lockRequest{}, false
		}
		if b && !req.rung.Reenter {
			h.badRequest(c, fmt.Sprintf("reenter=1 does not apply to lock %q: it cannot re-enter, and would hold the lock waiting for itself (locks that re-enter: %s)",
				req.rung.Name, strings.Join(h.reentrant(), ", ")))
			return lockRequest{}, false
		}
		req.reenter = b
	}
	if v, has := q["wait"]; has {
		if req.wait, ok = h.waitMode(c, req.rung, v[0]); !ok {
			return lockRequest{}, false
		}
	}
	if v, has := q["try"]; has {
		d, err := number.Duration("try", v[0], 0, maxTry)
		switch {
		case err != nil:
			h.badParam(c, err)
			return lockRequest{}, false
		case !req.rung.Try:
			h.badRequest(c, fmt.Sprintf("try= does not apply to lock %q: it never waits for a busy lock", req.rung.Name))
			return lockRequest{}, false
		}
		req.try = &d
	}
	if v, has := q["lease"]; has {
		d, err := number.Duration("lease", v[0], minLease, maxLease)
		switch {
		case err != nil:
			h.badParam(c, err)
			return lockRequest{}, false
		case !req.rung.Lease:
			h.badRequest(c, fmt.Sprintf("lease= does not apply to lock %q: its lock has no lease to set", req.rung.Name))
			return lockRequest{}, false
		}
		req.lease = d
	}
	if faults {
		plan, err := parsePlan(q)
		if err != nil {
			h.badParam(c, err)
			return lockRequest{}, false
		}
		if plan.Until && h.cfg.Faults.Stop == nil && h.cfg.Faults.StopUntil == nil {
			if _, ok := writtenOf(h.cfg.Redis, ""); !ok {
				h.badRequest(c, "until=written: this instance cannot watch its Redis from another process (it was given none, or an unknown client)")
				return lockRequest{}, false
			}
		}
		if plan.UntilTaken && h.cfg.Redis == nil {
			h.badRequest(c, "until=taken: this instance has no Redis to watch the lock on")
			return lockRequest{}, false
		}
		req.plan = plan
	}
	if req.rung.Unavailable != "" {
		h.serverMissing(c, req.rung, req.rung.Unavailable)
		return lockRequest{}, false
	}
	return req, true
}

// critical sells one item (sale) or adds one to num under the request's
// lock, or by the ceiling's atomic step. Once the lock is held the
// business runs to its end even if the client goes away: stopping half way
// through a read-modify-write would teach nothing.
func (h *handler) critical(c *gin.Context, req lockRequest, sale bool) (n int64, err error) {
	ctx := c.Request.Context()
	inv := h.cfg.Inventory.ItemIn(req.scope, req.sku)
	k := inv.Keys()
	key, counter := k.NumLock, k.Num // counter is what a pause with until=written watches
	if sale {
		key, counter = k.StockLock, k.Sold
	}
	call := lock.Call{Wait: req.wait, Try: req.try, Lease: req.lease, Skew: req.plan.Skew}
	if req.reenter {
		// Both acquisitions below must belong to one owner, this request;
		// a single one needs none (Reentrant makes its own).
		call.Owner = h.cfg.Instance + ":" + uuid.NewString()
	}
	if req.plan.armed() {
		written, _ := writtenOf(h.cfg.Redis, counter)
		w := watch{
			Written: written,
			Taken:   func(bound time.Duration) { takenBy(ctx, h.cfg.Redis, key, bound) },
			Alone:   func(bound time.Duration) { alone(h.cfg.Sections, key, bound) },
		}
		ctx = fault.With(ctx, req.plan.injector(*h.cfg.Faults, w, func(err error) {
			if err != nil {
				h.cfg.Log.Error("fault=pause did not stop the process", "err", err)
			}
		}))
	}
	budget := h.cfg.OpTimeout + req.plan.Work + req.plan.Pause
	if req.plan.Until || req.plan.UntilTaken {
		budget += req.plan.Pause // until=: at most twice pause=
	}
	if req.rung.Atomic {
		ctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		return h.atomic(ctx, req, inv, sale)
	}

	asked := time.Now()
	held, err := req.locker.Obtain(ctx, key, call)
	got := time.Now()
	h.m.obtained(req.rung.Name, got.Sub(asked), err)
	if err != nil {
		return 0, notHeld{err}
	}
	// How long this request waited for the lock: the bench's longest
	// wait per instance (a cohort keeps the others waiting) comes from it.
	// none has no lock to wait for: it says nothing.
	if req.rung.Try {
		c.Header(contract.HeaderLockWait, strconv.FormatFloat(float64(got.Sub(asked).Microseconds())/1000, 'f', 3, 64))
	}
	// The section as history sees it runs from here to the moment the
	// release is sent (or the pipeline carrying it): both ends on the
	// short side of the time the lock was really held.
	sec := contract.Section{Instance: h.cfg.Instance, Lock: req.rung.Name, Key: key, Acquired: got.UnixNano()}
	over := h.cfg.Sections.Hold(sec)
	fault.Inject(ctx, fault.Acquired)
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()

	// What the lock hands its section: a fencing token, a release that
	// rides the business's last write (one round trip for both), a pipe,
	// a carried value; and a context it ends when it learns the lock is
	// lost (rueidislock).
	release := func() error { sec.Released = time.Now().UnixNano(); return held.Release(bctx) }
	released := false // early, by a lock that commits the write after the pass
	var g inventory.Guard
	if t, ok := held.(lock.Tokened); ok {
		g.Token = t.Token()
		sec.Token = g.Token
	}
	g.Pipe, _ = held.(lock.Piped)
	g.Carrier, _ = held.(lock.Carrier)
	g.Queued = func() {
		// The write is queued behind the ones before it: pass the lock
		// on now, then learn whether the write landed.
		released = true
		h.released(req.rung, key, release())
	}
	if r, ok := held.(lock.PipelineReleaser); ok && !req.reenter {
		// When the business stops before its write (sold out, an error),
		// the lock releases on its own afterwards.
		g.Then = []inventory.Then{func(p redis.Pipeliner) {
			sec.Released = time.Now().UnixNano()
			release = r.ReleaseIn(bctx, p)
		}}
	}
	if l, ok := held.(interface{ Context() context.Context }); ok {
		// The business's context ends with the lock's, and the business
		// checks it before its write (inventory: not written, lock.ErrLost).
		var lost context.CancelCauseFunc
		bctx, lost = context.WithCancelCause(bctx)
		defer lost(nil)
		defer context.AfterFunc(l.Context(), func() { lost(lock.ErrLost) })()
	}
	wrote := false
	defer func() {
		if !released {
			h.released(req.rung, key, release())
		}
		h.m.held(req.rung.Name, time.Duration(sec.Released-sec.Acquired))
		sec.Wrote, sec.Refused = wrote, errors.Is(err, inventory.ErrStaleToken)
		over(sec)
	}()

	if req.reenter {
		// The articles' testReEnter: take the same lock again inside the
		// critical section. Only a lock that re-enters is asked
		// (lockRequest refuses the others): it counts up.
		inner, err := req.locker.Obtain(ctx, key, call)
		if err != nil {
			return 0, notHeld{fmt.Errorf("re-entering the lock it holds: %w", err)}
		}
		defer func() { h.released(req.rung, key, inner.Release(bctx)) }()
	}
	if sale {
		n, err = inv.Sell(bctx, g)
	} else {
		n, err = inv.Incr(bctx, g)
	}
	// Only a write that went through can do harm; a sold-out read, a
	// refused stale token or a failure before the write cannot.
	wrote = err == nil
	return n, err
}

// atomic is the ceilings' step, without a lock: one script in Redis, or
// db-optimistic's compare-and-set in MariaDB.
func (h *handler) atomic(ctx context.Context, req lockRequest, inv *inventory.Store, sale bool) (int64, error) {
	if req.rung.Store != lock.StoreMariaDB {
		if sale {
			return inv.SellAtomic(ctx)
		}
		return inv.IncrAtomic(ctx)
	}
	db := h.cfg.Optimistic
	if db == nil {
		return 0, fmt.Errorf("%w: mariadb (start the app with -mysql DSN)", lock.ErrNoServer)
	}
	line := req.wait != lock.WaitBackoff
	if sale {
		return db.SellOptimistic(ctx, req.scope, line)
	}
	return db.IncrOptimistic(ctx, req.scope, line)
}

// reentrant names the rungs that re-enter (Info.Reenter).
func (h *handler) reentrant() []string {
	var names []string
	for _, r := range h.cfg.Ladder.Rungs() {
		if r.Reenter {
			names = append(names, r.Name)
		}
	}
	return names
}

// notHeld is a failure to take the lock: the business never ran, so
// nothing was written, whatever went wrong.
type notHeld struct{ error }

func (e notHeld) Unwrap() error { return e.error }

// released logs and counts a release that failed: the lease had lapsed,
// or Redis.
func (h *handler) released(rung lock.Info, key string, err error) {
	h.m.releaseFailed(rung.Name, err)
	if err != nil {
		h.cfg.Log.Warn("release failed", "lock", rung.Name, "key", key, "err", err)
	}
}

func (h *handler) unavailable(c *gin.Context, rung lock.Info, err error) {
	// The reason tells a client whether the request may have changed
	// anything: a lock not had did not; a Redis failure may have, after
	// its write reached Redis.
	msg, reason := err.Error(), contract.ReasonUnavailable
	switch {
	case errors.Is(err, lock.ErrNoServer):
		h.serverMissing(c, rung, err.Error())
		return
	case errors.Is(err, inventory.ErrContended):
		msg, reason = fmt.Sprintf("lock %q: %v", rung.Name, err), contract.ReasonContended
	case errors.Is(err, lock.ErrLost):
		// The business stopped before its write: nothing changed.
		msg, reason = fmt.Sprintf("lock %q lost while held: nothing written: %v", rung.Name, err), contract.ReasonLockUnavailable
	case errors.Is(err, lock.ErrBusy):
		msg, reason = fmt.Sprintf("lock %q is held (try=0: one attempt, no wait)", rung.Name), contract.ReasonLockBusy
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

// waitMode parses wait=v for rung, or answers a 400 that says which
// modes it takes.
func (h *handler) waitMode(c *gin.Context, rung lock.Info, v string) (lock.WaitMode, bool) {
	m, err := lock.ParseWaitMode(v)
	if err != nil {
		h.badRequest(c, fmt.Sprintf("wait: unknown wait mode %q (valid: %v)", truncate(v, 32), lock.WaitModes))
		return "", false
	}
	if !slices.Contains(rung.Waits, m) {
		msg := fmt.Sprintf("wait=%s does not apply to lock %q: it takes no wait= (it does not poll a busy lock)", m, rung.Name)
		if len(rung.Waits) > 0 {
			msg = fmt.Sprintf("wait=%s does not apply to lock %q: it waits by %v", m, rung.Name, rung.Waits)
		}
		h.badRequest(c, msg)
		return "", false
	}
	return m, true
}

// serverMissing answers a 503 naming the server the rung needs and this
// instance lacks: nothing was tried, so nothing changed.
func (h *handler) serverMissing(c *gin.Context, rung lock.Info, why string) {
	c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"instance": h.cfg.Instance, "lock": rung.Name,
		"error": why, "reason": contract.ReasonServerMissing})
}
