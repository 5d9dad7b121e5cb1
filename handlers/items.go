package handlers

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

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
// The items found are remembered, up to maxKnownItems and for at most
// knownFor, so that a request for one costs no round trip. An item not
// found is asked of Redis again each time and never remembered, so a
// client that names a new sku per request grows nothing here either. (A
// Redis emptied behind the app's back, restarted without its data,
// leaves remembered items that are gone: a sale of one finds no stock,
// as it did before this check, and there are at most maxKnownItems.)
//
// How many items exist is bounded too: /reset notes the items it makes,
// with when, in a sorted set in Redis (ItemsKey), shared by the
// instances, and refuses to make more than Config.MaxItems at once (a
// 409 too_many_items naming the bound, nothing made). So that the bound
// is never used up for good (2,000 resets of new names, say), an item
// not made again (reset) for ItemIdle is dropped, its keys deleted, when
// a /reset needs its room (dropIdle). No run's items are among them: a
// run's resets make its items in its own scope (runs.go), which go with
// the run, so a flood of items never keeps the owner's bench from its
// own.
type items struct {
	mu    sync.RWMutex
	known map[string]time.Time // when found
	// registry is the Redis of ItemsKey; nil: items are not counted.
	registry redis.Cmdable
}

// maxKnownItems is how many items an instance remembers exist: the bench's
// items (inventory.MaxSKUs) several times over, and every item that may
// exist (DefaultMaxItems).
const maxKnownItems = 4 * inventory.MaxSKUs

// DefaultMaxItems is Config.MaxItems's default: the bench's items
// (/reset?skus=K, K up to inventory.MaxSKUs) and as many more named ones.
const DefaultMaxItems = 2 * inventory.MaxSKUs

// ItemsKey is the sorted set, in the main Redis, of the items /reset
// made, each scored by when it was last made (Unix ms).
const ItemsKey = "lab:items:made"

// ItemIdle is how long an item stays one of the bound after its last
// reset, at least, once the bound is reached: long enough for a reset,
// the sales a person sends and the read that follows. No run's item is
// one of them (a run's items are in its scope).
const ItemIdle = 10 * time.Second

// knownFor is how long an instance trusts that an item it found exists:
// another instance may have dropped it since.
const knownFor = time.Minute

// maxDrop is the most idle items one refused /reset drops.
const maxDrop = 2 * inventory.MaxSKUs

//go:embed items_make.lua
var itemsMakeSrc string

var itemsMake = redis.NewScript(itemsMakeSrc)

//go:embed items_forget.lua
var itemsForgetSrc string

var itemsForget = redis.NewScript(itemsForgetSrc)

// makeItems notes skus as items that exist before a /reset makes them,
// in scope: true when it may go on (the lab's item, or no count kept, or
// a run's items, noted as its own, or the items stay within MaxItems);
// otherwise it has answered a 409 too_many_items, or a 503 when Redis
// failed, and nothing was made.
func (h *handler) makeItems(c *gin.Context, scope string, skus []string) bool {
	if h.items.registry == nil || len(skus) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	if scope != "" {
		if err := h.noteRun(ctx, scope, skus); err != nil {
			c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "noting the run's items: " + err.Error(),
				"reason": contract.ReasonLockUnavailable})
			return false
		}
		return true
	}
	if skus[0] == "" {
		return true
	}
	args := make([]any, 0, len(skus)+2)
	args = append(args, h.cfg.MaxItems, time.Now().UnixMilli())
	for _, s := range skus {
		args = append(args, s)
	}
	res, err := itemsMake.Run(ctx, h.items.registry, []string{ItemsKey}, args...).Int64Slice()
	if err == nil && len(res) == 2 && res[0] == 0 {
		var dropped int
		if dropped, err = h.items.dropIdle(ctx, time.Now().Add(-ItemIdle)); err == nil && dropped > 0 {
			args[1] = time.Now().UnixMilli()
			res, err = itemsMake.Run(ctx, h.items.registry, []string{ItemsKey}, args...).Int64Slice()
		}
	}
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("the count of items answered %v", res)
	}
	if err != nil {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{"error": "counting the items: " + err.Error(),
			"reason": contract.ReasonLockUnavailable})
		return false
	}
	if res[0] == 0 {
		what := "item " + strconv.Quote(skus[0])
		if len(skus) > 1 {
			what = fmt.Sprintf("items 1 to %d", len(skus))
		}
		c.AbortWithStatusJSON(http.StatusConflict, gin.H{
			"error": fmt.Sprintf("at most %d items may exist at once, and %d do: making %s would pass that; reset items that exist instead (/reset?skus=K resets items 1 to K)",
				h.cfg.MaxItems, res[1], what),
			"reason": contract.ReasonTooManyItems, "max_items": h.cfg.MaxItems, "items": res[1]})
		return false
	}
	return true
}

// knows reports whether sku is remembered to exist in scope.
func (it *items) knows(scope, sku string) bool {
	it.mu.RLock()
	defer it.mu.RUnlock()
	found, ok := it.known[scope+"/"+sku]
	return ok && time.Since(found) < knownFor
}

// remember notes that sku exists in scope, while there is room.
func (it *items) remember(scope, sku string) {
	k := scope + "/" + sku
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.known == nil {
		it.known = make(map[string]time.Time)
	}
	if _, ok := it.known[k]; ok || len(it.known) < maxKnownItems {
		it.known[k] = time.Now()
	}
}

// forget drops what is remembered of scope's items ("" and sku: the
// lab's item sku).
func (it *items) forget(scope string, skus ...string) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if scope == "" {
		for _, sku := range skus {
			delete(it.known, "/"+sku)
		}
		return
	}
	for k := range it.known {
		if strings.HasPrefix(k, scope+"/") {
			delete(it.known, k)
		}
	}
}

// itemExists answers for a request about item sku of scope before
// anything is done for it: true when the item exists (always for the
// lab's item of a scope); otherwise it has answered a 404 no_such_item,
// or a 503 with reason when Redis could not say, and the request must
// stop. lock names the request's lock in the answer ("" for none).
func (h *handler) itemExists(c *gin.Context, scope, sku, lock, reason string) bool {
	if sku == "" || h.items.knows(scope, sku) {
		return true
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.cfg.OpTimeout)
	defer cancel()
	ok, err := h.cfg.Inventory.ItemIn(scope, sku).Exists(ctx)
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
	h.items.remember(scope, sku)
	return true
}

// dropIdle drops the items last made before cutoff (at most maxDrop):
// each item's keys are deleted, then the item is forgotten unless a
// /reset made it again meanwhile. (The registry and an item's keys are
// in different slots of a cluster, so the two steps are not one script:
// a /reset of an item idle for ItemIdle landing between them keeps the
// item counted without its keys, a 404 until its next reset.) It
// returns how many it forgot.
func (it *items) dropIdle(ctx context.Context, cutoff time.Time) (int, error) {
	before := strconv.FormatInt(cutoff.UnixMilli(), 10)
	idle, err := it.registry.ZRangeByScore(ctx, ItemsKey, &redis.ZRangeBy{Min: "-inf", Max: "(" + before, Count: maxDrop}).Result()
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, sku := range idle {
		k := inventory.ItemOf(sku)
		// One item's keys share its hash tag: one DEL, in a cluster too.
		if err := it.registry.Del(ctx, append([]string{k.Stock, k.Sold, k.Num}, k.LockKeys()...)...).Err(); err != nil {
			return dropped, err
		}
		n, err := itemsForget.Run(ctx, it.registry, []string{ItemsKey}, sku, before).Int()
		if err != nil {
			return dropped, err
		}
		dropped += n
	}
	it.forget("", idle...)
	return dropped, nil
}
