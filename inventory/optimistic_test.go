package inventory_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/inventory"
)

// TestOptimisticSalesAreExact: 40 buyers at once over a stock of 100, no
// lock at all: the version check turns every lost race into a retry, so
// exactly the stock is sold, once each, and the rest are sold out.
func TestOptimisticSalesAreExact(t *testing.T) {
	db := servertest.MariaDB(t)
	ctx := context.Background()
	s, err := inventory.NewDBStore(ctx, db, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, "", 100); err != nil {
		t.Fatal(err)
	}
	var ok, soldOut atomic.Int64
	seen := sync.Map{}
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			for range 4 {
				left, err := s.SellOptimistic(ctx, "", true)
				switch {
				case errors.Is(err, inventory.ErrSoldOut):
					soldOut.Add(1)
				case err != nil:
					t.Error(err)
				default:
					ok.Add(1)
					if _, dup := seen.LoadOrStore(left, true); dup {
						t.Errorf("two sales left %d: one item sold twice", left)
					}
				}
			}
		})
	}
	wg.Wait()
	snap, err := s.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if ok.Load() != 100 || soldOut.Load() != 60 || snap.Stock != 0 || snap.Sold != 100 {
		t.Fatalf("ok %d, sold out %d, %+v: want exactly the stock of 100 sold", ok.Load(), soldOut.Load(), snap)
	}
	for range 5 {
		if _, err := s.IncrOptimistic(ctx, "", true); err != nil {
			t.Fatal(err)
		}
	}
	if snap, _ := s.Snapshot(ctx, ""); snap.Num != 5 {
		t.Fatalf("num %d after 5 increments", snap.Num)
	}
}

// BenchmarkOptimisticContended is the articles' optimistic lock under the
// lab's load: 100 writers at once on one row, each increment retried until
// its version check wins, in this process's line (queue, the default) or
// each on its own (backoff). It reports increments per second.
func BenchmarkOptimisticContended(b *testing.B) {
	db := servertest.MariaDB(b)
	ctx := context.Background()
	s, err := inventory.NewDBStore(ctx, db, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		line bool
	}{{"queue", true}, {"backoff", false}} {
		b.Run(w.name, func(b *testing.B) {
			const writers = 100
			var next atomic.Int64
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := s.IncrOptimistic(ctx, "", w.line); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "incr/s")
		})
	}
}

// TestOptimisticRunsHaveRowsOfTheirOwn: a run's scope keeps its counters
// in a row of its own, which a sale of the lab's row never touches;
// Drop deletes it (and never the lab's), and a sale of a dropped run's
// row writes nothing.
func TestOptimisticRunsHaveRowsOfTheirOwn(t *testing.T) {
	db := servertest.MariaDB(t)
	ctx := context.Background()
	s, err := inventory.NewDBStore(ctx, db, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for scope, stock := range map[string]int64{"": 5, "run7": 3} {
		if err := s.Reset(ctx, scope, stock); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SellOptimistic(ctx, "", true); err != nil {
		t.Fatal(err)
	}
	if left, err := s.SellOptimistic(ctx, "run7", true); err != nil || left != 2 {
		t.Fatalf("the run's sale: %d %v, want 2 left", left, err)
	}
	if snap, _ := s.Snapshot(ctx, "run7"); snap.Stock != 2 || snap.Sold != 1 {
		t.Errorf("the run's row: %+v, want stock 2 sold 1", snap)
	}
	if snap, _ := s.Snapshot(ctx, ""); snap.Stock != 4 || snap.Sold != 1 {
		t.Errorf("the lab's row: %+v, want stock 4 sold 1", snap)
	}
	if _, err := s.Snapshot(ctx, "elsewhere"); err == nil {
		t.Error("a scope that is no run's was read")
	}
	if err := s.Drop(ctx, "run7", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, "run7"); err == nil {
		t.Error("the dropped run's row is still there")
	}
	if _, err := s.SellOptimistic(ctx, "run7", true); err == nil {
		t.Error("a sale of a dropped run's row went through")
	}
	if snap, err := s.Snapshot(ctx, ""); err != nil || snap.Stock != 4 {
		t.Errorf("the lab's row after Drop: %+v %v, want it kept", snap, err)
	}
}
