package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
)

// A run's counters live in its scope (package guard: each take opens
// one), apart from the lab's items: its items' keys, and its row of the
// database's table. They go once the run is over, a while after its last
// request (RunIdle), so that what a run leaves never piles up:
//
//   - RunsKey, a sorted set in the main Redis, holds each scope with
//     the time it was last used (its take, its resets, its release);
//   - RunItemsKey(scope) is the set of the items its resets made ("."
//     for its lab's item: no sku has a dot);
//   - a take and a release drop every other scope idle for RunIdle:
//     the keys of its items (their counters and their locks' keys),
//     their set, and its row of the database.
//
// A request of a run that ended may still land in its scope (one
// admitted just before the release): it changes what nobody judges
// any more, and its keys go with the scope's, RunIdle later.

// RunsKey is the sorted set of the runs' scopes, by when last used (Unix
// ms).
const RunsKey = "lab:runs"

// RunItemsKey is the set of the items a run's resets made in its scope.
func RunItemsKey(scope string) string { return RunsKey + ":" + scope + ":items" }

// RunIdle is how long a run's scope stays after its last use: longer
// than any request of it may still be on its way (a wait for the lock of
// at most maxTry, the business's OpTimeout, a fault's pause).
const RunIdle = 2 * time.Minute

// labItemMember stands for a scope's lab item (sku "") in RunItemsKey.
const labItemMember = "."

// noteRun notes scope as used now, and skus as its items.
func (h *handler) noteRun(ctx context.Context, scope string, skus []string) error {
	members := make([]any, len(skus))
	for i, sku := range skus {
		if sku == "" {
			sku = labItemMember
		}
		members[i] = sku
	}
	_, err := h.items.registry.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, RunsKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: scope})
		p.SAdd(ctx, RunItemsKey(scope), members...)
		return nil
	})
	return err
}

// touchRun notes scope as used now ("": none).
func (h *handler) touchRun(ctx context.Context, scope string) {
	if scope == "" || h.items.registry == nil {
		return
	}
	if err := h.items.registry.ZAdd(ctx, RunsKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: scope}).Err(); err != nil {
		h.cfg.Log.Warn("noting a run's last use", "scope", scope, "err", err)
	}
}

// reclaimRuns drops the scopes idle for RunIdle but keep: their items'
// keys, their sets, their rows. A failure is logged: the scopes stay for
// the next take or release to drop.
func (h *handler) reclaimRuns(ctx context.Context, keep string) {
	rdb := h.items.registry
	if rdb == nil {
		return
	}
	h.touchRun(ctx, keep)
	cutoff := strconv.FormatInt(time.Now().Add(-RunIdle).UnixMilli(), 10)
	idle, err := rdb.ZRangeByScore(ctx, RunsKey, &redis.ZRangeBy{Min: "-inf", Max: "(" + cutoff, Count: 64}).Result()
	if err != nil {
		h.cfg.Log.Warn("finding the runs that ended", "err", err)
		return
	}
	for _, scope := range idle {
		if scope == keep {
			continue
		}
		if err := h.dropRun(ctx, scope); err != nil {
			h.cfg.Log.Warn("dropping what a run left", "scope", scope, "err", err)
			return
		}
	}
}

// dropRun deletes what scope's run left, then forgets the scope.
func (h *handler) dropRun(ctx context.Context, scope string) error {
	rdb := h.items.registry
	skus, err := rdb.SMembers(ctx, RunItemsKey(scope)).Result()
	if err != nil {
		return err
	}
	for _, sku := range skus {
		if sku == labItemMember {
			sku = ""
		}
		k := inventory.ItemIn(scope, sku)
		// One item's keys share its hash tag: one DEL, in a cluster too.
		if err := rdb.Del(ctx, append([]string{k.Stock, k.Sold, k.Num}, k.LockKeys()...)...).Err(); err != nil {
			return err
		}
	}
	if h.cfg.Optimistic != nil {
		if err := h.cfg.Optimistic.Drop(ctx, scope); err != nil {
			return err
		}
	}
	h.items.forget(scope)
	if err := rdb.Del(ctx, RunItemsKey(scope)).Err(); err != nil {
		return err
	}
	return rdb.ZRem(ctx, RunsKey, scope).Err()
}
