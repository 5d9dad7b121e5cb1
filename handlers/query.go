package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/internal/number"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

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
func (h *handler) rung(c *gin.Context, q url.Values) (lock.Info, lock.Locker, bool) {
	name := q.Get("lock")
	if name == "" {
		h.badRequest(c, "missing lock: say ?lock=NAME")
		return lock.Info{}, nil, false
	}
	rung, locker, ok := h.cfg.Ladder.Lookup(name)
	if !ok {
		h.badRequest(c, fmt.Sprintf("unknown lock %q", truncate(name, 64)))
		return lock.Info{}, nil, false
	}
	return rung, locker, true
}

// sku parses ?sku=ID ("" without it) for rung (nil: no rung named):
// db-optimistic's table keeps the lab's one item.
func (h *handler) sku(c *gin.Context, q url.Values, rung *lock.Info) (string, bool) {
	if !q.Has("sku") {
		return "", true
	}
	sku := q.Get("sku")
	if err := inventory.ParseSKU(sku); err != nil {
		h.badRequest(c, "sku: "+err.Error())
		return "", false
	}
	if rung != nil && rung.Store == lock.StoreMariaDB {
		h.badRequest(c, fmt.Sprintf("sku= does not apply to lock %q: its table in MariaDB keeps the lab's one item", rung.Name))
		return "", false
	}
	return sku, true
}

// Reasons of the app's answers to requests it cannot serve, besides
// contract's. Nothing was done for any.
const (
	// ReasonBadRequest: a 400, the request is wrong (the error says how;
	// "param" names the parameter when one is).
	ReasonBadRequest = "bad_request"
	// ReasonNotFound: a 404, no such endpoint.
	ReasonNotFound = "not_found"
	// ReasonMethodNotAllowed: a 405 (Allow says which methods).
	ReasonMethodNotAllowed = "method_not_allowed"
	// ReasonTooLarge: a 413 or 414, a body or a request target over
	// the app's bounds (MaxBodyBytes, MaxURIBytes).
	ReasonTooLarge = "too_large"
	// ReasonInternal: a 500, the handler failed (a bug: the log says).
	ReasonInternal = "internal"
)

func (h *handler) badRequest(c *gin.Context, msg string) {
	c.AbortWithStatusJSON(http.StatusBadRequest, gin.H{"error": msg, "reason": ReasonBadRequest, "locks": h.cfg.Ladder.Names()})
}

// badParam answers err with a 400 that names its parameter when err
// says it (a *number.Error).
func (h *handler) badParam(c *gin.Context, err error) {
	body := gin.H{"error": err.Error(), "reason": ReasonBadRequest, "locks": h.cfg.Ladder.Names()}
	var ne *number.Error
	if errors.As(err, &ne) {
		body["param"] = ne.Param
	}
	c.AbortWithStatusJSON(http.StatusBadRequest, body)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
