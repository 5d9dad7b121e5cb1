package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/lock"
)

// holdBack is a redis.Hook that blocks one command (by name) until
// released: it puts two waiters' steps in the order a test wants.
type holdBack struct {
	cmd     string
	reached chan struct{} // closed when the command arrives
	release chan struct{} // closed to let it go
}

func (h *holdBack) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdBack) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *holdBack) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == h.cmd {
			close(h.reached)
			<-h.release
		}
		return next(ctx, cmd)
	}
}

// TestDelSetNXExpiredLockHasTwoWinners is the articles' P2 and P3: both
// find the lock expired (its holder died). P3 gets as far as its DEL and
// is held there; P2 deletes, SETNXes and holds the lock; then P3's DEL
// deletes P2's fresh lock and P3's SETNX wins too: two holders.
func TestDelSetNXExpiredLockHasTwoWinners(t *testing.T) {
	rdb, addr := redistest.Start(t)
	ctx := context.Background()
	const key = "lock:k"
	o := lock.Options{TTL: 10 * time.Second}
	rdb.Set(ctx, key, time.Now().Add(-time.Second).UnixMilli(), 0) // a dead holder's expiry

	slow := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { slow.Close() })
	hb := &holdBack{cmd: "del", reached: make(chan struct{}), release: make(chan struct{})}
	slow.AddHook(hb)
	type result struct {
		ok  bool
		err error
	}
	p3done := make(chan result, 1)
	go func() {
		l, err := lock.NewDelSetNX(slow, o).Obtain(ctx, key, lock.Call{Try: dur(0)})
		p3done <- result{l != nil, err}
	}()
	<-hb.reached // P3 has seen the lock expired and is about to DEL it

	p2, err := lock.NewDelSetNX(rdb, o).Obtain(ctx, key, lock.Call{Try: dur(0)})
	if err != nil {
		t.Fatalf("P2 on the expired lock: %v", err)
	}
	close(hb.release)
	got := <-p3done
	if got.err != nil || !got.ok {
		t.Fatalf("P3: %v; want it to hold the lock too (its DEL freed P2's)", got.err)
	}
	t.Log("P2 and P3 both hold the lock: the race of the articles' first fix")
	p2.Release(ctx)
}
