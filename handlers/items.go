package handlers

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/inventory"
)

// items says whether an item exists before a request for it takes a lock
// or writes anything. An item exists once POST /reset made it; a request
// whose sku= names any other is a 404 that creates nothing: no lock key,
// no token counter, no znode, no row, no line in memory. Otherwise every
// new sku would leave state behind that nothing frees. The lab's item
// (no sku=) is not looked up: its keys are fixed, and the bench and the
// scenarios reset it first.
//
// The items found are remembered, up to maxKnownItems, so that a request
// for one costs no round trip: nothing deletes an item. An item not
// found is asked of Redis again each time and never remembered, so a
// client that names a new sku per request grows nothing here either. (A
// Redis emptied behind the app's back, restarted without its data,
// leaves remembered items that are gone: a sale of one finds no stock,
// as it did before this check, and there are at most maxKnownItems.)
type items struct {
	mu    sync.RWMutex
	known map[string]struct{}
}

// maxKnownItems is how many items an instance remembers exist: the bench's
// items (inventory.MaxSKUs) several times over.
const maxKnownItems = 4 * inventory.MaxSKUs

// knows reports whether sku is remembered to exist.
func (it *items) knows(sku string) bool {
	it.mu.RLock()
	defer it.mu.RUnlock()
	_, ok := it.known[sku]
	return ok
}

// remember notes that sku exists, while there is room.
func (it *items) remember(sku string) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.known == nil {
		it.known = make(map[string]struct{})
	}
	if len(it.known) < maxKnownItems {
		it.known[sku] = struct{}{}
	}
}

// itemExists answers for a request about item sku before anything is
// done for it: true when the item exists (always for the lab's item);
// otherwise it has answered a 404 no_such_item, or a 503 with reason
// when Redis could not say, and the request must stop. lock names the
// request's lock in the answer ("" for none).
func (h *handler) itemExists(c *gin.Context, sku, lock, reason string) bool {
	if sku == "" || h.items.knows(sku) {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	ok, err := h.cfg.Inventory.Item(sku).Exists(ctx)
	body := gin.H{"instance": h.cfg.Instance}
	if lock != "" {
		body["lock"] = lock
	}
	switch {
	case err != nil:
		body["error"], body["reason"] = err.Error(), reason
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, body)
		return false
	case !ok:
		body["error"] = fmt.Sprintf("no item %q: POST /reset?stock=N&sku=%s makes it", sku, sku)
		body["reason"] = contract.ReasonNoSuchItem
		c.AbortWithStatusJSON(http.StatusNotFound, body)
		return false
	}
	h.items.remember(sku)
	return true
}
