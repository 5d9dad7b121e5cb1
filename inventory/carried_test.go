package inventory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

// carry is a lock's carried values, as lock.CohortCarry's sections keep
// them.
type carry map[string]int64

func (c carry) Carried(key string) (int64, bool) { v, ok := c[key]; return v, ok }
func (c carry) Carry(key string, v int64)        { c[key] = v }

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
	c := carry{}
	for i, want := range []int64{2, 1, 0} {
		got, _, err := s.SellCarried(ctx, inventory.StockFence, int64(10+i), c)
		if err != nil || got != want {
			t.Fatalf("sale %d: %d, %v; want %d", i+1, got, err, want)
		}
		if c[inventory.KeyStock] != want {
			t.Fatalf("sale %d carried %d, want %d", i+1, c[inventory.KeyStock], want)
		}
	}
	if _, _, err := s.SellCarried(ctx, inventory.StockFence, 13, c); !errors.Is(err, inventory.ErrSoldOut) {
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
	fresh := carry{}
	if _, _, err := s.SellCarried(ctx, inventory.StockFence, 14, fresh); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("a sale that reads a 0: %v, want ErrSoldOut", err)
	}
	if v, ok := fresh[inventory.KeyStock]; !ok || v != 0 {
		t.Errorf("after a sold-out read the lock carries %d, %v; want 0, true", v, ok)
	}

	n := carry{}
	for want := int64(1); want <= 3; want++ {
		if got, _, err := s.IncrCarried(ctx, inventory.NumFence, 20+want, n); err != nil || got != want {
			t.Fatalf("increment %d: %d, %v", want, got, err)
		}
	}
	if got, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); got != 3 {
		t.Errorf("num %d after 3 increments, want 3", got)
	}
}

// A carried value that is no longer the one in Redis (written outside the
// lock) is caught by the write's compare-and-set: the operation reads the
// value again and applies to it, so the outside write is not lost.
func TestCarriedValueMovedIsReadAgain(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	c := carry{inventory.KeyNum: 5, inventory.KeyStock: 10}
	rdb.Set(ctx, inventory.KeyNum, 41, 0) // someone outside the lock
	got, _, err := s.IncrCarried(ctx, inventory.NumFence, 1, c)
	if err != nil || got != 42 {
		t.Fatalf("increment over a moved num: %d, %v; want 42 (41 read again, plus one)", got, err)
	}
	if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); v != 42 || c[inventory.KeyNum] != 42 {
		t.Errorf("num %d, carried %d; want 42 and 42", v, c[inventory.KeyNum])
	}

	rdb.Set(ctx, inventory.KeyStock, 7, 0)
	if got, _, err := s.SellCarried(ctx, inventory.StockFence, 2, c); err != nil || got != 6 {
		t.Fatalf("sale over a moved stock: %d, %v; want 6", got, err)
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
	if _, err := s.IncrFenced(ctx, inventory.NumFence, 9); err != nil { // a newer holder was here
		t.Fatal(err)
	}
	for _, c := range []carry{{inventory.KeyNum: 1}, {}} {
		if _, _, err := s.IncrCarried(ctx, inventory.NumFence, 8, c); !errors.Is(err, inventory.ErrStaleToken) {
			t.Fatalf("token 8 after 9 (carried %v): %v, want ErrStaleToken", c, err)
		}
		if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); v != 1 {
			t.Fatalf("num %d, want 1: the stale write went through", v)
		}
		if v, ok := c[inventory.KeyNum]; ok && v != 1 {
			t.Fatalf("the refused section carried %d", v)
		}
	}
}

// A value that keeps moving under the lock ends in ErrContended, not in a
// loop: only writers outside the lock can do that.
func TestCarriedGivesUpOnAValueThatKeepsMoving(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 10); err != nil {
		t.Fatal(err)
	}
	moves := 0
	moving := fault.With(ctx, func(_ context.Context, p fault.Point) {
		if p == fault.Business { // between each try's read and its write
			moves++
			rdb.Incr(ctx, inventory.KeyNum)
		}
	})
	_, _, err := s.IncrCarried(moving, inventory.NumFence, 1, carry{inventory.KeyNum: 0})
	if !errors.Is(err, inventory.ErrContended) {
		t.Fatalf("%v, want ErrContended", err)
	}
	if v, _ := rdb.Get(ctx, inventory.KeyNum).Int64(); moves < 2 || v != int64(moves) {
		t.Errorf("num %d after %d outside increments: want as many (the operation wrote nothing), and more than one try", v, moves)
	}
}
