package handlers

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
)

// lockState answers GET /lock?endpoint=sale|testLock[&sku=ID]. It reads
// the lab's own lock key of the item, in the main Redis (the rungs of
// other servers keep theirs elsewhere: this says not held), never a key
// the request names: the run's, with a run's token (guard.Header).
func (h *handler) lockState(c *gin.Context) {
	q, ok := h.query(c, "endpoint", "sku")
	if !ok {
		return
	}
	sku, ok := h.sku(c, q, nil)
	if !ok {
		return
	}
	scope, ok := h.admitReset(c, true) // a run's token: its scope's lock
	if !ok {
		return
	}
	keys := h.cfg.Inventory.ItemIn(scope, sku).Keys()
	key := keys.StockLock
	switch q.Get("endpoint") {
	case "", "sale":
	case "testLock":
		key = keys.NumLock
	default:
		h.badRequest(c, "endpoint: "+truncate(q.Get("endpoint"), 32)+" is not sale or testLock")
		return
	}
	if h.cfg.Redis == nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "this instance was given no Redis to read locks from", "reason": contract.ReasonUnavailable})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	ttl, err := h.cfg.Redis.PTTL(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "PTTL " + key + ": " + err.Error(), "reason": contract.ReasonUnavailable})
		return
	}
	// PTTL answers -2 for no key, -1 for a key without a TTL (go-redis
	// passes them on as durations of -2 and -1 nanoseconds).
	st := contract.LockState{Key: key}
	switch {
	case ttl == -1:
		st.Held, st.TTLMs = true, -1
	case ttl >= 0:
		st.Held, st.TTLMs = true, ttl.Milliseconds()
	}
	c.JSON(http.StatusOK, st)
}
