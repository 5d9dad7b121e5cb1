package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
	"github.com/lockladder/lockladder/internal/number"
)

// The run guard (package guard) as the app serves it: the lab's runs
// take, renew and release it at /guard, through the load balancer,
// showing the stack's run key (guard.KeyHeader: its Redis password, which
// only the stack's owner reads); the app names the holder from what
// runs and makes its token. While a run holds it, the requests that
// change the counters (/reset, /sale, /testLock) are refused but for
// the run's own (guard.Header: its token).
//
//	GET    /guard                                  who holds it: {"held": false} or the holder
//	POST   /guard?run=KIND[&lock=&endpoint=&scenario=]  take it: {"token", "owner", "since", "ttl_ms", "settle_ms"}
//	PUT    /guard?run=...&since=UNIXMS             renew it (guard.Header: the token)
//	DELETE /guard                                  release it (guard.Header: the token)
//
// Without the key, POST, PUT and DELETE are a 403 run_key_required; an
// app given no key (Config.RunKey) takes no guard (a 404). A take while
// another run holds it, and a request that would change the counters
// under it, are a 409 run_in_progress naming the holder and since when;
// a renewal of a guard another run took since, or past guard.MaxHold,
// is a 409 guard_lost.

// guardRoutes adds /guard to r when the app has a guard.
func (h *handler) guardRoutes(r *gin.Engine) {
	if h.guard == nil {
		return
	}
	r.GET("/guard", h.guardHolder)
	r.POST("/guard", h.guardKey, h.guardTake)
	r.PUT("/guard", h.guardKey, h.guardRenew)
	r.DELETE("/guard", h.guardKey, h.guardRelease)
}

func (h *handler) guardHolder(c *gin.Context) {
	if _, ok := h.query(c); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	holder, held, err := h.guard.Holder(ctx)
	if err != nil {
		h.guardUnavailable(c, err)
		return
	}
	if !held {
		c.JSON(http.StatusOK, gin.H{"held": false})
		return
	}
	c.JSON(http.StatusOK, gin.H{"held": true, "owner": holder.Owner, "since": holder.Since})
}

// guardKey lets through a request that shows the run key: a 404 when the
// app has none, a 403 without it.
func (h *handler) guardKey(c *gin.Context) {
	if h.cfg.RunKey == "" {
		c.AbortWithStatusJSON(http.StatusNotFound, gin.H{"error": "this app takes no run guard: it was given no run key (GET /guard says who holds one)",
			"reason": ReasonNotFound})
		return
	}
	got := c.GetHeader(guard.KeyHeader)
	if subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.RunKey)) != 1 {
		c.AbortWithStatusJSON(http.StatusForbidden, gin.H{"reason": guard.ReasonNoKey,
			"error": fmt.Sprintf("the run guard is the lab's runs' alone: header %s must carry the stack's Redis password (the run dir's redis.pass, readable by the stack's owner)", guard.KeyHeader)})
		return
	}
	c.Next()
}

func (h *handler) guardTake(c *gin.Context) {
	run, ok := h.guardRun(c)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	t, err := h.guard.TakeAs(ctx, run.Name(), run.Guest)
	if err != nil {
		h.guardRefused(c, err)
		return
	}
	h.view.forget() // this instance knows at once
	if t.From != nil {
		h.cfg.Log.Info("the owner's run took the stack from a guest's", "run", t.Holder.Owner, "from", t.From.Owner)
	}
	h.reclaimRuns(ctx, t.Holder.Scope)
	body := gin.H{"token": t.Token, "owner": t.Holder.Owner, "since": t.Holder.Since, "scope": t.Holder.Scope,
		"guest": t.Holder.Guest, "ttl_ms": h.guard.TTL().Milliseconds(), "settle_ms": settle.Milliseconds()}
	if t.From != nil {
		body["took_from"] = gin.H{"owner": t.From.Owner, "since": t.From.Since}
	}
	c.JSON(http.StatusOK, body)
}

func (h *handler) guardRenew(c *gin.Context) {
	run, ok := h.guardRun(c, "since", "scope")
	if !ok {
		return
	}
	ms, err := number.Whole("since", c.Query("since"), 0, math.MaxInt64)
	since := time.UnixMilli(ms)
	if err != nil || time.Since(since) < -time.Minute || time.Since(since) > guard.MaxHold {
		h.badRequest(c, fmt.Sprintf("since: the Unix milliseconds the run took the guard, within the last %s", guard.MaxHold))
		return
	}
	scope := c.Query("scope")
	if err := guard.CheckScope(scope); err != nil {
		h.badRequest(c, "scope: the scope POST /guard gave: "+err.Error())
		return
	}
	token, ok := h.guardToken(c)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	holder, err := h.guard.Renew(ctx, token, guard.Holder{Owner: run.Name(), Since: since, Guest: run.Guest, Scope: scope})
	if err != nil {
		h.guardRefused(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"owner": holder.Owner, "since": holder.Since, "ttl_ms": h.guard.TTL().Milliseconds()})
}

func (h *handler) guardRelease(c *gin.Context) {
	if _, ok := h.query(c); !ok {
		return
	}
	token, ok := h.guardToken(c)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	held, holder, ok, err := h.guard.State(ctx)
	if err == nil && ok && held == token {
		h.touchRun(ctx, holder.Scope) // its keys go a while after its last request
	}
	released, err := h.guard.Release(ctx, token)
	if err != nil {
		h.guardUnavailable(c, err)
		return
	}
	h.view.forget()
	if released {
		h.reclaimRuns(ctx, "")
	}
	c.JSON(http.StatusOK, gin.H{"released": released})
}

// guardRun reads what runs (guard.RunOf; a 400 when bad): the app names
// the holder from it, and a lock it serves not is no run of the lab's.
func (h *handler) guardRun(c *gin.Context, more ...string) (guard.Run, bool) {
	q, ok := h.query(c, append([]string{"run", "lock", "endpoint", "scenario", "guest"}, more...)...)
	if !ok {
		return guard.Run{}, false
	}
	run, err := guard.RunOf(q)
	if err != nil {
		h.badRequest(c, err.Error())
		return guard.Run{}, false
	}
	if run.Lock != "" {
		if _, _, known := h.cfg.Ladder.Lookup(run.Lock); !known {
			h.badRequest(c, fmt.Sprintf("lock: this stack serves no lock %q", run.Lock))
			return guard.Run{}, false
		}
	}
	return run, true
}

// guardToken reads the run's token (guard.Header; a 400 without it).
func (h *handler) guardToken(c *gin.Context) (string, bool) {
	token := c.GetHeader(guard.Header)
	if token == "" || len(token) > 64 {
		h.badRequest(c, fmt.Sprintf("header %s: the token POST /guard gave (1 to 64 characters)", guard.Header))
		return "", false
	}
	return token, true
}

// admitReset answers for a /reset, and for the reads of a run's
// counters (/stock, /lock), while a run may hold the guard: the scope of
// the counters and true when it may go on ("" with no guard here, or
// without a token when nobody holds it or ro is set; the holder's scope
// with its token); otherwise it has answered a 409 (run_in_progress
// naming the holder; guard_lost for a token not the holder's), or a 503
// when Redis could not say, and nothing was done. It reads the guard
// afresh: a reset is rare.
func (h *handler) admitReset(c *gin.Context, ro bool) (string, bool) {
	if h.guard == nil {
		return "", true
	}
	token := c.GetHeader(guard.Header)
	if ro && token == "" {
		return "", true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	scope, err := h.guard.Admit(ctx, token)
	if err != nil {
		h.guardRefused(c, err)
		return "", false
	}
	return scope, true
}

// guardRefused answers err: a 409 naming the run that holds the guard,
// or a 503.
func (h *handler) guardRefused(c *gin.Context, err error) {
	var busy *guard.BusyError
	if !errors.As(err, &busy) {
		h.guardUnavailable(c, err)
		return
	}
	reason, msg := guard.ReasonBusy, busy.Error()
	switch {
	case busy.Lost && c.Request.URL.Path != "/guard":
		reason = guard.ReasonLost
		holder := "nobody holds it now"
		if busy.Holder.Owner != "" {
			holder = "it is " + busy.Holder.String()
		}
		msg = fmt.Sprintf("header %s carries no token of the run that holds the stack (%s): a run's requests count only while it holds it, and this one's ended or gave the stack up; nothing was done",
			guard.Header, holder)
	case busy.Lost:
		reason = guard.ReasonLost
	case c.Request.URL.Path != "/guard":
		msg = fmt.Sprintf("a run holds the stack: %s; %s would change the counters it reads back, and is refused until the run ends (a guard whose holder died expires %s after its last renewal, and none is held over %s)",
			busy.Holder, c.Request.URL.Path, h.guard.TTL(), guard.MaxHold)
	}
	body := gin.H{"error": msg, "reason": reason, "bound": busy.Bound, "preempted": busy.Preempted}
	if busy.Holder.Owner != "" {
		body["owner"], body["since"] = busy.Holder.Owner, busy.Holder.Since.Format(time.RFC3339Nano)
	}
	c.AbortWithStatusJSON(http.StatusConflict, body)
}

func (h *handler) guardUnavailable(c *gin.Context, err error) {
	c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": err.Error(), "reason": contract.ReasonLockUnavailable})
}
