package inventory_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

func TestSellFencedSellsUntilSoldOut(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ token, want int64 }{{1, 1}, {2, 0}} {
		if got, err := s.Sell(ctx, inventory.Guard{Token: step.token}); err != nil || got != step.want {
			t.Fatalf("token %d: got %d, %v; want %d", step.token, got, err, step.want)
		}
	}
	if _, err := s.Sell(ctx, inventory.Guard{Token: 3}); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("third sale: %v, want ErrSoldOut", err)
	}
	if got := rdb.Get(ctx, inventory.StockFence).Val(); got != "3" {
		t.Errorf("highest token seen = %q, want 3: a sold-out read still registers its token", got)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil || snap != (inventory.Snapshot{Stock: 0, Sold: 2}) {
		t.Fatalf("snapshot %+v, %v", snap, err)
	}

	// Reset forgets the highest token seen along with the lock's counter,
	// so tokens may start again at 1.
	if err := s.Reset(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sell(ctx, inventory.Guard{Token: 1}); err != nil {
		t.Fatalf("token 1 after Reset: %v", err)
	}
}

func TestSellFencedRefusesStaleToken(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	s.Reset(ctx, 10)

	if n, err := s.Sell(ctx, inventory.Guard{Token: 6}); err != nil || n != 9 {
		t.Fatalf("token 6: %d, %v", n, err)
	}
	_, err := s.Sell(ctx, inventory.Guard{Token: 5})
	if !errors.Is(err, inventory.ErrStaleToken) {
		t.Fatalf("token 5 after 6: %v, want ErrStaleToken", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "read of "+inventory.KeyStock+" with token 5, highest seen 6") {
		t.Errorf("error %q does not name both tokens", msg)
	}
	if n, err := s.Sell(ctx, inventory.Guard{Token: 6}); err != nil || n != 8 {
		t.Fatalf("the same token again: %d, %v; want 8", n, err)
	}
	snap, _ := s.Snapshot(ctx)
	if snap.Stock != 8 || snap.Sold != 2 {
		t.Fatalf("snapshot %+v, want stock 8, sold 2", snap)
	}
}

func TestIncrFenced(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	s.Reset(ctx, 0)
	for token := int64(1); token <= 2; token++ {
		if n, err := s.Incr(ctx, inventory.Guard{Token: token}); err != nil || n != token {
			t.Fatalf("token %d: %d, %v", token, n, err)
		}
	}
	if _, err := s.Incr(ctx, inventory.Guard{Token: 1}); !errors.Is(err, inventory.ErrStaleToken) {
		t.Fatalf("token 1 after 2: %v, want ErrStaleToken", err)
	}
	if snap, _ := s.Snapshot(ctx); snap.Num != 2 || snap.Sold != 0 {
		t.Fatalf("snapshot %+v, want num 2 and no sale", snap)
	}
}

// TestSellFencedInterleaved is the lesson of rung 10: A (token 5) and B
// (token 6) both read the stock before either writes. Because B's read
// registered 6, A's write is refused whichever writes first, and the item
// is sold once. With only the write fenced, A's write would be accepted
// when it came first, and the item sold twice.
func TestSellFencedInterleaved(t *testing.T) {
	rdb, _ := redistest.Start(t)
	s := inventory.New(rdb)
	for _, tc := range []struct {
		name   string
		aFirst bool
	}{{"A writes first", true}, {"B writes first", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if err := s.Reset(ctx, 10); err != nil {
				t.Fatal(err)
			}
			type result struct {
				n   int64
				err error
			}
			// sell starts a sale that stops after its read until proceed
			// is closed; it returns once the read is done.
			sell := func(token int64, proceed <-chan struct{}) <-chan result {
				read := make(chan struct{})
				out := make(chan result, 1)
				hooked := fault.With(ctx, func(_ context.Context, p fault.Point) {
					if p == fault.Business {
						close(read)
						<-proceed
					}
				})
				go func() {
					n, err := s.Sell(hooked, inventory.Guard{Token: token})
					out <- result{n, err}
				}()
				select {
				case <-read:
				case r := <-out:
					t.Fatalf("token %d: sale ended before its write: %d, %v", token, r.n, r.err)
				}
				return out
			}
			goA, goB := make(chan struct{}), make(chan struct{})
			a := sell(5, goA) // A reads 10 with token 5 and pauses
			b := sell(6, goB) // B reads 10 with token 6 and pauses

			var ra, rb result
			if tc.aFirst {
				close(goA)
				ra = <-a
				close(goB)
				rb = <-b
			} else {
				close(goB)
				rb = <-b
				close(goA)
				ra = <-a
			}
			if !errors.Is(ra.err, inventory.ErrStaleToken) || !strings.Contains(ra.err.Error(), "write of "+inventory.KeyStock) {
				t.Errorf("A's write (token 5, after B read with 6): %d, %v; want ErrStaleToken on the write", ra.n, ra.err)
			}
			if rb.err != nil || rb.n != 9 {
				t.Errorf("B's write (token 6): %d, %v; want 9", rb.n, rb.err)
			}
			snap, err := s.Snapshot(ctx)
			if err != nil || snap.Stock != 9 || snap.Sold != 1 {
				t.Fatalf("snapshot %+v, %v; want stock 9, sold 1: one item, sold once", snap, err)
			}
		})
	}
}

// TestSellFencedExactWithoutALock runs fenced sales from many goroutines
// with no lock at all, each with a fresh, increasing token: many are
// refused, but none oversells, and sold counts only the accepted ones.
func TestSellFencedExactWithoutALock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	const initial = 100
	if err := s.Reset(ctx, initial); err != nil {
		t.Fatal(err)
	}
	var ok, stale atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				token, err := rdb.Incr(ctx, "test:tokens").Result()
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Sell(ctx, inventory.Guard{Token: token})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, inventory.ErrStaleToken):
					stale.Add(1)
				case errors.Is(err, inventory.ErrSoldOut):
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if oversold := ok.Load() - (initial - snap.Stock); oversold != 0 || snap.Stock < 0 {
		t.Fatalf("%d sales accepted, stock %d -> %d: oversold %d", ok.Load(), initial, snap.Stock, oversold)
	}
	if snap.Sold != ok.Load() {
		t.Fatalf("sold = %d, want the %d accepted sales", snap.Sold, ok.Load())
	}
	if ok.Load() == 0 {
		t.Fatal("no sale was accepted")
	}
	t.Logf("%d accepted, %d refused as stale, stock %d", ok.Load(), stale.Load(), snap.Stock)
}
