package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// The calls to one master can arrive out of order: a swap that lands late
// must not put an older token back over a newer one, and one that lands
// after the chain's release must not leave a lock behind.
func TestRelayOutOfOrderOnOneMaster(t *testing.T) {
	clients, _ := redistest.StartMasters(t, 1)
	rdb, ctx := clients[0], context.Background()
	rdb.Set(ctx, "k", "c1", time.Minute) // the chain's first token
	for _, c := range []struct {
		seq  int
		want bool
		left string
	}{{2, true, "c1#2"}, {1, false, "c1#2"}, {3, true, "c1#3"}} {
		if ok, err := lock.Swap(ctx, rdb, "k", "c1", c.seq); err != nil || ok != c.want {
			t.Fatalf("swap to #%d: %v %v, want %v", c.seq, ok, err, c.want)
		}
		if got := rdb.Get(ctx, "k").Val(); got != c.left {
			t.Fatalf("after the swap to #%d the master holds %q, want %q", c.seq, got, c.left)
		}
	}
	if ok, _ := lock.Swap(ctx, rdb, "k", "other", 9); ok {
		t.Fatal("another chain's swap replaced the token")
	}
	if ok, _ := lock.ChainRelease(ctx, rdb, "k", "c1", 2); ok {
		t.Fatal("a release up to #2 removed #3")
	}
	if ok, _ := lock.ChainRelease(ctx, rdb, "k", "c1", 4); !ok {
		t.Fatal("the chain's release up to #4 left #3")
	}
	if ok, _ := lock.Swap(ctx, rdb, "k", "c1", 5); ok || rdb.Exists(ctx, "k").Val() != 0 {
		t.Fatal("a swap that landed after the release put the lock back")
	}
}
