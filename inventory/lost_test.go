package inventory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

// TestBusinessChecksItsContextBeforeWriting: a context that ends between
// the read and the write (a lock that says it was lost: rueidislock's)
// stops Sell and Incr before their write: nothing changes, and the error
// carries the cause.
func TestBusinessChecksItsContextBeforeWriting(t *testing.T) {
	rdb, _ := redistest.Start(t)
	s := inventory.New(rdb)
	lost := errors.New("the lock was lost")
	for name, op := range map[string]func(context.Context, inventory.Guard) (int64, error){"Sell": s.Sell, "Incr": s.Incr} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if err := s.Reset(ctx, 5); err != nil {
				t.Fatal(err)
			}
			bctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			// The lock is lost during the business, after the read.
			bctx = fault.With(bctx, func(_ context.Context, p fault.Point) {
				if p == fault.Business {
					cancel(lost)
				}
			})
			if _, err := op(bctx, inventory.Guard{}); !errors.Is(err, lost) {
				t.Fatalf("%s with its lock lost: %v, want the cause", name, err)
			}
			snap, err := s.Snapshot(ctx)
			if err != nil || snap != (inventory.Snapshot{Stock: 5, Sold: 0, Num: 0}) {
				t.Fatalf("after the lost section: %+v, %v; want nothing written", snap, err)
			}
		})
	}
}
