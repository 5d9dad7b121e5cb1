package handlers

import (
	"context"
	"crypto/subtle"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/guard"
)

// While a run holds the guard, /sale and /testLock that do not carry its
// token are refused (409 run_in_progress) before they touch anything: a
// sale from the page's button in another tab would unbalance the books
// the run reads back, and the judge would call a safe lock OVERSOLD.
// Every run holds the whole stack, so every item is the run's.
//
// They are the hot path: reading the guard from Redis on each would add
// a round trip to every sale. Each instance keeps its view of the guard
// instead, read again once it is settle old (one read for all the
// requests that find it stale at once); a take answers the run with
// settle, and the run waits that long before its first reset
// (guard.Take), so that every instance's view has it by then. The run's
// own requests, carrying the token the view holds, pass without a read.
//
// The check and the request are two steps, not one: a request admitted
// just before a take, and still waiting for its lock when the run resets
// the stock, lands in the run's books. Only a request that waited longer
// than settle can.

// settle is how old an instance's view of the guard may be.
const settle = 25 * time.Millisecond

// guardView is the guard as this instance last read it.
type guardView struct {
	cur atomic.Pointer[viewed]
	mu  sync.Mutex // one read at a time; the others wait for it
}

type viewed struct {
	token  string // "" when nobody held it
	holder guard.Holder
	at     time.Time
}

// forget makes the next check read the guard again.
func (v *guardView) forget() { v.cur.Store(nil) }

// now is the view, read again from s when it is older than settle, or
// when fresh is set. A read that fails leaves the last view (or none):
// Redis failing fails the request anyway. But a fresh read that fails
// gives none: the token the last view does not know may be a newer
// run's, and refusing it would answer the run a 409 for Redis's outage,
// which the judge reads as sold out.
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
// /testLock): true when it may go on (no guard here, nobody holds it,
// or it carries the holder's token); otherwise it has answered a 409
// run_in_progress naming the run, and nothing was done.
func (h *handler) admitRun(c *gin.Context) bool {
	if h.guard == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	token := c.GetHeader(guard.Header)
	v := h.view.now(ctx, h.guard, false)
	if v != nil && token != "" && v.token != "" && token != v.token {
		// A run's token the view does not know: a newer run's, taken
		// since the view was read.
		v = h.view.now(ctx, h.guard, true)
	}
	if v == nil || v.token == "" || (token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(v.token)) == 1) {
		return true
	}
	h.guardRefused(c, &guard.BusyError{Holder: v.holder})
	return false
}
