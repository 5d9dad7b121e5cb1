package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// setnxOnce takes the lock by SETNX, without a TTL, one attempt a call.
type setnxOnce struct{ rdb redis.UniversalClient }

type setnxHeld struct{ setnxOnce }

func (l setnxOnce) Obtain(ctx context.Context, key string) (Held, error) {
	ok, err := l.rdb.SetNX(ctx, key, "1", 0).Result()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrNotObtained
	}
	return setnxHeld{l}, nil
}

func (h setnxHeld) Release(ctx context.Context) error { return h.rdb.Del(ctx, "lock").Err() }

var setnxOnceTarget = Target{Name: "setnx-once", Faults: Idle | Cancel,
	New: func(rdb redis.UniversalClient, _ Env) Locker { return setnxOnce{rdb} }}

// TestCancelInAGame: a game offers both cancels of a client about to
// start an attempt, in words; "cancel-after A" runs A's SETNX and
// cancels its Obtain before the reply, A gives up, and B can never take
// the lock (LEAKED). "cancel A" before the same SETNX leaves nothing.
func TestCancelInAGame(t *testing.T) {
	g, err := Play(t.Context(), setnxOnceTarget, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, o := range g.Next {
		labels = append(labels, o.Move+": "+o.Label)
	}
	all := strings.Join(labels, "\n")
	for _, want := range []string{"cancel A: cancel the context of A's Obtain before", "cancel-after B: B's"} {
		if !strings.Contains(all, want) {
			t.Errorf("the moves offered lack %q:\n%s", want, all)
		}
	}
	g, err = Play(t.Context(), setnxOnceTarget, 2, []string{"cancel-after A"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Verdict != Leaked || !strings.Contains(g.Explain, "cancelled Obtain or Release left the lock's key behind") {
		t.Errorf("cancel-after A: verdict %q (%s), want LEAKED", g.Verdict, g.Explain)
	}
	g, err = Play(t.Context(), setnxOnceTarget, 2, []string{"cancel A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Verdict != "" || len(g.Holders) != 1 || g.Holders[0] != "B" {
		t.Errorf("cancel A, then B: verdict %q, holders %v; want B holding, no verdict", g.Verdict, g.Holders)
	}
	if _, err := Play(t.Context(), setnxOnceTarget, 2, []string{"cancel A", "cancel A"}); err == nil || !strings.Contains(err.Error(), "not possible here") {
		t.Errorf("a second cancel of A: %v", err)
	}
}
