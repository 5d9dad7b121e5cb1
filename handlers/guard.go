package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/guard"
)

// The run guard (package guard) as the app serves it: the runs take,
// renew and release it at /guard, through the load balancer, and /reset
// is refused while one holds it but for its own (guard.Header).
//
//	GET    /guard                 who holds it: {"held": false} or the holder
//	POST   /guard?owner=NAME      take it: {"token", "owner", "since", "ttl_ms"}
//	PUT    /guard?owner=NAME      renew it (guard.Header: the token)
//	DELETE /guard                 release it (guard.Header: the token)
//
// A take while another run holds it, and a /reset, are a 409
// run_in_progress naming the holder and since when; a renewal of a guard
// another run took since is a 409 guard_lost.

// guardRoutes adds /guard to r when the app has a guard.
func (h *handler) guardRoutes(r *gin.Engine) {
	if h.guard == nil {
		return
	}
	r.GET("/guard", h.guardHolder)
	r.POST("/guard", h.guardTake)
	r.PUT("/guard", h.guardRenew)
	r.DELETE("/guard", h.guardRelease)
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

func (h *handler) guardTake(c *gin.Context) {
	owner, ok := h.guardOwner(c)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	token, holder, err := h.guard.Take(ctx, owner)
	if err != nil {
		h.guardRefused(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"token": token, "owner": holder.Owner, "since": holder.Since,
		"ttl_ms": h.guard.TTL().Milliseconds()})
}

func (h *handler) guardRenew(c *gin.Context) {
	owner, ok := h.guardOwner(c)
	if !ok {
		return
	}
	token, ok := h.guardToken(c)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	holder, err := h.guard.Renew(ctx, token, owner)
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
	released, err := h.guard.Release(ctx, token)
	if err != nil {
		h.guardUnavailable(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"released": released})
}

// guardOwner reads ?owner=NAME, the run's name (a 400 when bad).
func (h *handler) guardOwner(c *gin.Context) (string, bool) {
	q, ok := h.query(c, "owner")
	if !ok {
		return "", false
	}
	if !q.Has("owner") {
		h.badRequest(c, "missing owner: say ?owner=NAME, the run's name (shown to whoever finds the stack busy)")
		return "", false
	}
	owner := q.Get("owner")
	if err := guard.CheckOwner(owner); err != nil {
		h.badRequest(c, "owner: "+err.Error())
		return "", false
	}
	return owner, true
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

// admitReset answers for a /reset while a run may hold the guard: true
// when it may go on (no guard here, nobody holds it, or the request
// carries the holder's token); otherwise it has answered a 409
// run_in_progress naming the holder, or a 503 when Redis could not say,
// and nothing was done.
//
// The check and the reset are two steps, not one: a run that takes the
// guard between them finds its own reset after this one, which it sends
// only once it holds the guard.
func (h *handler) admitReset(c *gin.Context) bool {
	if h.guard == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	if err := h.guard.Admit(ctx, c.GetHeader(guard.Header)); err != nil {
		h.guardRefused(c, err)
		return false
	}
	return true
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
	if busy.Lost {
		reason = guard.ReasonLost
	} else if c.Request.URL.Path == "/reset" {
		msg = fmt.Sprintf("a run holds the stack: %s; /reset would put the stock back under it, and is refused until the run ends (a guard whose holder died expires %s after its last renewal)",
			busy.Holder, h.guard.TTL())
	}
	c.AbortWithStatusJSON(http.StatusConflict, gin.H{"error": msg, "reason": reason,
		"owner": busy.Holder.Owner, "since": busy.Holder.Since.Format(time.RFC3339Nano)})
}

func (h *handler) guardUnavailable(c *gin.Context, err error) {
	c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": err.Error(), "reason": contract.ReasonLockUnavailable})
}
