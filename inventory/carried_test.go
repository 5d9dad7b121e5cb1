package inventory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

// carry is a lock's carried values and queue of writes as
// speed.CohortCarry's sections keep them, run at once: each Commit sends
// its write in a pipeline of its own before it returns, and a write that
// fails drops what was carried, as a spoiled cohort does.
type carry struct {
	vals   map[string]int64
	failed bool
}

func carrying(kv map[string]int64) *carry { return &carry{vals: kv} }

func (c *carry) Carried(key string) (int64, bool) { v, ok := c.vals[key]; return v, ok }

func (c *carry) Carry(key string, v int64) {
	if c.failed { // a spoiled cohort carries nothing more
		return
	}
	if c.vals == nil {
		c.vals = map[string]int64{}
	}
	c.vals[key] = v
}

func (c *carry) Commit(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) func() error {
	err := alone(rdb, q)
	if err != nil {
		c.failed, c.vals = true, nil
	}
	return func() error { return err }
}

// alone sends q's commands in a pipeline of their own and returns their
// outcome.
func alone(rdb redis.Cmdable, q func(redis.Pipeliner) func() error) error {
	var check func() error
	_, _ = rdb.Pipelined(context.Background(), func(p redis.Pipeliner) error { check = q(p); return nil })
	return check()
}

func (c *carry) Settle() error {
	if c.failed {
		return errors.New("a write did not land")
	}
	return nil
}

// sell and incr run a carried operation to its end: the write landed, or
// why not.
func sell(s *inventory.Store, token int64, c inventory.Carrier) (int64, error) {
	return s.Sell(context.Background(), inventory.Guard{Token: token, Carrier: c})
}

func incr(s *inventory.Store, token int64, c inventory.Carrier) (int64, error) {
	return s.Incr(context.Background(), inventory.Guard{Token: token, Carrier: c})
}

// Nothing carried: the operation reads (with its token) and carries what
// it wrote; carried: it computes from the carried value, which the write
// checks, and carries the new one. The sold counter counts every sale.
func TestCarriedReadsOnceThenCarries(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 3); err != nil {
		t.Fatal(err)
	}
	c := carrying(nil)
	for i, want := range []int64{2, 1, 0} {
		got, err := sell(s, int64(10+i), c)
		if err != nil || got != want {
			t.Fatalf("sale %d: %d, %v; want %d", i+1, got, err, want)
		}
		if c.vals[inventory.KeyStock] != want {
			t.Fatalf("sale %d carried %d, want %d", i+1, c.vals[inventory.KeyStock], want)
		}
	}
	if _, err := sell(s, 13, c); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("a sale from a carried 0: %v, want ErrSoldOut", err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil || snap != (inventory.Snapshot{Stock: 0, Sold: 3}) {
		t.Fatalf("snapshot %+v, %v; want stock 0, sold 3", snap, err)
	}
	if got := rdb.Get(ctx, inventory.StockFence).Val(); got != "12" {
		t.Errorf("highest token seen %q, want 12 (the last write's)", got)
	}
	// A section that reads and finds nothing to sell still carries what
	// it read: the next one need not read.
	fresh := carrying(nil)
	if _, err := sell(s, 14, fresh); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("a sale that reads a 0: %v, want ErrSoldOut", err)
	}
	if v, ok := fresh.vals[inventory.KeyStock]; !ok || v != 0 {
		t.Errorf("after a sold-out read the lock carries %d, %v; want 0, true", v, ok)
	}

	n := carrying(nil)
	for want := int64(1); want <= 3; want++ {
		if got, err := incr(s, 20+want, n); err != nil || got != want {
			t.Fatalf("increment %d: %d, %v", want, got, err)
		}
	}
	if got, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); got != 3 {
		t.Errorf("num %d after 3 increments, want 3", got)
	}
}

// A carried value that is no longer the one in Redis (written outside the
// lock) is caught by the write's compare-and-set: the write is refused
// (ErrContended), the outside write stays, and what was carried is
// dropped, so the next section reads and applies to it.
func TestCarriedValueMovedIsRefusedThenReadAgain(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	c := carrying(map[string]int64{inventory.KeyNum: 5})
	rdb.Set(ctx, inventory.KeyNum, 41, 0) // someone outside the lock
	if _, err := incr(s, 1, c); !errors.Is(err, inventory.ErrContended) {
		t.Fatalf("increment over a moved num: %v, want ErrContended", err)
	}
	if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); v != 41 {
		t.Fatalf("num %d, want 41: the refused write went through", v)
	}
	next := carrying(nil) // the lock carries nothing after a failed write
	if got, err := incr(s, 2, next); err != nil || got != 42 {
		t.Fatalf("the next increment: %d, %v; want 42 (41 read, plus one)", got, err)
	}
	if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); v != 42 || next.vals[inventory.KeyNum] != 42 {
		t.Errorf("num %d, carried %d; want 42 and 42", v, next.vals[inventory.KeyNum])
	}

	sc := carrying(map[string]int64{inventory.KeyStock: 10})
	rdb.Set(ctx, inventory.KeyStock, 7, 0)
	if _, err := sell(s, 3, sc); !errors.Is(err, inventory.ErrContended) {
		t.Fatalf("sale over a moved stock: %v, want ErrContended", err)
	}
	if got, err := sell(s, 4, sc); err != nil || got != 6 {
		t.Fatalf("the next sale: %d, %v; want 6", got, err)
	}
	if sold, _ := rdb.Get(ctx, inventory.KeySold).Int64(); sold != 1 {
		t.Errorf("sold %d, want 1: the refused write counted nothing", sold)
	}
}

// A section whose token is lower than the highest seen writes nothing,
// carried value or not, and carries nothing.
func TestCarriedStaleTokenWritesNothing(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Incr(ctx, inventory.Guard{Token: 9}); err != nil { // a newer holder was here
		t.Fatal(err)
	}
	for _, c := range []*carry{carrying(map[string]int64{inventory.KeyNum: 1}), carrying(nil)} {
		if _, err := incr(s, 8, c); !errors.Is(err, inventory.ErrStaleToken) {
			t.Fatalf("token 8 after 9 (carried %v): %v, want ErrStaleToken", c.vals, err)
		}
		if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); v != 1 {
			t.Fatalf("num %d, want 1: the stale write went through", v)
		}
		if v, ok := c.vals[inventory.KeyNum]; ok && v != 1 {
			t.Fatalf("the refused section carried %d", v)
		}
	}
}

// A sold out from a carried zero counts only once the writes before it
// have landed: when one did not, the stock is read, and sold.
func TestCarriedSoldOutWaitsForTheWritesBefore(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 5); err != nil {
		t.Fatal(err)
	}
	c := carrying(map[string]int64{inventory.KeyStock: 0})
	c.failed = true // the write that left the carried 0 did not land
	if got, err := sell(s, 1, c); err != nil || got != 4 {
		t.Fatalf("a sale after a carried 0 that never landed: %d, %v; want 4 (5 read, one sold)", got, err)
	}
}
