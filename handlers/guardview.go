package handlers

import (
	"context"
	"crypto/subtle"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/guard"
)

// While a run holds the guard, /sale and /testLock that do not carry its
// token are refused (409 run_in_progress) before they touch anything: a
// sale from the page's button in another tab would take a core from the
// run's load. Those that carry it go to the run's scope: its items' own
// keys (inventory.ItemIn), which no request without the token reaches.
// A request that carries a token that is not the holder's is refused
// (409 guard_lost): never moved to the lab's items.
//
// They are the hot path: reading the guard from Redis on each would add
// a round trip to every sale. Each instance keeps its view of the guard
// instead, read again once it is settle old (one read for all the
// requests that find it stale at once); a request carrying a token the
// view does not know reads it afresh. The run's own requests, carrying
// the token the view holds, pass without a read.
//
// The check and the request are two steps, not one: a request admitted
// just before a take lands after the run's reset. It lands in the lab's
// items (or its own run's scope), never in the run's: the scope, not the
// timing, keeps the run's books its own.

// settle is how old an instance's view of the guard may be.
const settle = 25 * time.Millisecond

// guardView is the guard as this instance last read it.
type guardView struct {
	cur atomic.Pointer[viewed]
	mu  sync.Mutex // one read at a time; the others wait for it
}

type viewed struct {
	token  string       // "" when nobody held it
	holder guard.Holder // its Scope: where the holder's counters are
	at     time.Time
}

// forget makes the next check read the guard again.
func (v *guardView) forget() { v.cur.Store(nil) }

// now is the view, read again from s when it is older than settle, or
// when fresh is set. A read that fails leaves the last view (or none):
// Redis failing fails the request anyway. But a fresh read that fails
// gives none: the token the last view does not know may be a newer
// run's, whose scope it cannot say.
func (v *guardView) now(ctx context.Context, s *guard.Store, fresh bool) *viewed {
	if cur := v.cur.Load(); !fresh && cur != nil && time.Since(cur.at) < settle {
		return cur
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if cur := v.cur.Load(); cur != nil && time.Since(cur.at) < settle && !fresh {
		return cur // read by the request we waited for
	}
	at := time.Now()
	token, holder, held, err := s.State(ctx)
	if err != nil {
		if fresh {
			return nil
		}
		return v.cur.Load()
	}
	if !held {
		token = ""
	}
	nv := &viewed{token: token, holder: holder, at: at}
	v.cur.Store(nv)
	return nv
}

// admitRun answers for a request that changes the counters (/sale,
// /testLock): the scope its counters are kept under and true when it
// may go on ("" with no guard here, or nobody holding it and no token;
// the holder's scope with its token); otherwise it has answered a 409
// (run_in_progress without a token, guard_lost with another), or a 503
// when Redis could not say where a token's run keeps its counters, and
// nothing was done.
func (h *handler) admitRun(c *gin.Context) (string, bool) {
	if h.guard == nil {
		return "", true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	token := c.GetHeader(guard.Header)
	v := h.view.now(ctx, h.guard, false)
	mine := func(v *viewed) bool {
		return v != nil && v.token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(v.token)) == 1
	}
	if token != "" && !mine(v) {
		// A run's token the view does not know: a newer run's, taken
		// since the view was read, or one that ended.
		v = h.view.now(ctx, h.guard, true)
	}
	switch {
	case token == "" && (v == nil || v.token == ""):
		return "", true
	case token == "":
		h.guardRefused(c, &guard.BusyError{Holder: v.holder})
	case mine(v):
		return v.holder.Scope, true
	case v == nil:
		h.guardUnavailable(c, errors.New("the run guard could not be read: which run this request's token belongs to is unknown"))
	default:
		h.guardRefused(c, &guard.BusyError{Holder: v.holder, Lost: true})
	}
	return "", false
}
