package notify

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/hashslot"
	"github.com/lockladder/lockladder/lock"
)

// ClusterOptions are the Options for a Notifier over a
// Redis Cluster client: the handoff channel carries tag, the hash tag of
// the lab's item (its subscription lives on the item's master and follows
// it), and one anchor channel lands on each other master. A cluster's
// keyspace events are each node's own: without a subscription on every
// master, the waiters of the items whose keys live elsewhere would hear
// no release and wait for their tick. The masters are those of the slot
// map now; a master added later is not heard.
func ClusterOptions(ctx context.Context, cc *redis.ClusterClient, tag string) (Options, error) {
	o := Options{Channel: lock.HandoffChannel + ":" + tag}
	//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7; CLUSTER SLOTS answers on every cluster, 7's included
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return o, fmt.Errorf("lock: CLUSTER SLOTS: %w", err)
	}
	own := hashslot.Of(o.Channel)
	seen := map[string]bool{} // masters by node ID
	for _, s := range slots {
		if len(s.Nodes) > 0 && own >= s.Start && own <= s.End {
			seen[s.Nodes[0].ID] = true
		}
	}
	for _, s := range slots {
		if len(s.Nodes) == 0 || seen[s.Nodes[0].ID] {
			continue
		}
		seen[s.Nodes[0].ID] = true
		anchor, ok := hashslot.TagIn("anchor", s.Start, s.End)
		if !ok {
			return o, fmt.Errorf("lock: no hash tag in slots %d-%d", s.Start, s.End)
		}
		o.Anchors = append(o.Anchors, "lockladder:keyspace:"+anchor)
	}
	return o, nil
}
