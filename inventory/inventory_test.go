package inventory_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

func TestSellUntilSoldOut(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	for _, sell := range []struct {
		name string
		fn   func(context.Context) (int64, error)
	}{{"Sell", func(ctx context.Context) (int64, error) { return s.Sell(ctx, inventory.Guard{}) }}, {"SellAtomic", s.SellAtomic}} {
		t.Run(sell.name, func(t *testing.T) {
			if err := s.Reset(ctx, 2); err != nil {
				t.Fatal(err)
			}
			for _, want := range []int64{1, 0} {
				if got, err := sell.fn(ctx); err != nil || got != want {
					t.Fatalf("got %d, %v; want %d", got, err, want)
				}
			}
			if _, err := sell.fn(ctx); !errors.Is(err, inventory.ErrSoldOut) {
				t.Fatalf("third sale: %v, want ErrSoldOut", err)
			}
			snap, err := s.Snapshot(ctx)
			if err != nil || snap != (inventory.Snapshot{Stock: 0, Sold: 2, Num: 0}) {
				t.Fatalf("snapshot %+v, %v", snap, err)
			}
		})
	}
}

func TestIncr(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	s.Reset(ctx, 0)
	if n, err := s.Incr(ctx, inventory.Guard{}); n != 1 || err != nil {
		t.Fatalf("Incr: %d %v", n, err)
	}
	if n, err := s.IncrAtomic(ctx); n != 2 || err != nil {
		t.Fatalf("IncrAtomic: %d %v", n, err)
	}
}

// TestResetDeletesLockKeysOnly: Reset deletes the item's lock keys, which
// it names, and leaves every other key, another item's locks too.
func TestResetDeletesLockKeysOnly(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	locks := s.Keys().LockKeys()
	for _, k := range []string{inventory.StockLock, inventory.NumLock, inventory.StockFence, inventory.NumFence} {
		if !slices.Contains(locks, k) {
			t.Errorf("LockKeys %q lacks %s", locks, k)
		}
	}
	other := s.Item("1").Keys().StockLock
	for _, k := range append([]string{other, "keep"}, locks...) {
		rdb.Set(ctx, k, "x", 0)
	}
	rdb.Set(ctx, inventory.KeyNum, 42, 0)
	if err := s.Reset(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, locks...).Val(); n != 0 {
		t.Fatalf("%d lock keys survived reset", n)
	}
	if rdb.Exists(ctx, "keep", other).Val() != 2 {
		t.Fatal("reset deleted an unrelated key")
	}
	if snap, _ := s.Snapshot(ctx); snap != (inventory.Snapshot{Stock: 5}) {
		t.Fatalf("after reset %+v", snap)
	}
}

// TestExistsOnceReset: an item exists once Reset made it, and selling or
// counting an item that does not exist does not make it.
func TestExistsOnceReset(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb).Item("7")
	if ok, err := s.Exists(ctx); ok || err != nil {
		t.Fatalf("before any reset: %v %v", ok, err)
	}
	if _, err := s.Sell(ctx, inventory.Guard{}); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("sale of no item: %v", err)
	}
	if _, err := s.SellAtomic(ctx); !errors.Is(err, inventory.ErrSoldOut) {
		t.Fatalf("atomic sale of no item: %v", err)
	}
	if ok, _ := s.Exists(ctx); ok {
		t.Fatal("a sale made the item")
	}
	if err := s.Reset(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx); !ok || err != nil {
		t.Fatalf("after reset: %v %v", ok, err)
	}
}

// TestAtomicCeilingNeverOversells: many concurrent atomic sales sell
// exactly the stock, and sold agrees.
func TestAtomicCeilingNeverOversells(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	const stock, buyers = 100, 400
	s.Reset(ctx, stock)
	ok := buy(t, s.SellAtomic, buyers)
	snap, _ := s.Snapshot(ctx)
	if ok.Load() != stock || snap.Stock != 0 || snap.Sold != stock {
		t.Fatalf("%d sales succeeded, snapshot %+v; want exactly %d", ok.Load(), snap, stock)
	}
}

// TestSellRacesWithoutALock shows why the ladder exists: the articles'
// GET/check/SET sale, run concurrently with no lock, sells more than the
// stock.
func TestSellRacesWithoutALock(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	const stock, buyers = 50, 400
	s.Reset(ctx, stock)
	ok := buy(t, func(ctx context.Context) (int64, error) { return s.Sell(ctx, inventory.Guard{}) }, buyers)
	snap, _ := s.Snapshot(ctx)
	oversold := ok.Load() - (stock - snap.Stock)
	if oversold <= 0 {
		t.Fatalf("%d sales of %d stock, %d left: the race did not show", ok.Load(), stock, snap.Stock)
	}
	if snap.Sold != ok.Load() {
		t.Fatalf("sold counter %d, successes %d", snap.Sold, ok.Load())
	}
	t.Logf("no lock: %d sold from a stock of %d (%d oversold)", ok.Load(), stock, oversold)
}

// TestThenRidesBehindTheLastWrite: a Then's commands run in the pipeline of
// the operation's last write, after it (they see the new value), and only
// when the operation gets that far.
func TestThenRidesBehindTheLastWrite(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	s := inventory.New(rdb)
	if err := s.Reset(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		key  string
		fn   func(inventory.Then) (int64, error)
	}{
		{"Sell", inventory.KeyStock, func(th inventory.Then) (int64, error) {
			return s.Sell(ctx, inventory.Guard{Then: []inventory.Then{th}})
		}},
		{"Incr", inventory.KeyNum, func(th inventory.Then) (int64, error) {
			return s.Incr(ctx, inventory.Guard{Then: []inventory.Then{th}})
		}},
		{"IncrFenced", inventory.KeyNum, func(th inventory.Then) (int64, error) {
			return s.Incr(ctx, inventory.Guard{Token: 1, Then: []inventory.Then{th}})
		}},
		{"SellFenced (sold out)", inventory.KeyStock, func(th inventory.Then) (int64, error) {
			return s.Sell(ctx, inventory.Guard{Token: 1, Then: []inventory.Then{th}})
		}},
	} {
		t.Run(op.name, func(t *testing.T) {
			var seen *redis.StringCmd
			n, err := op.fn(func(p redis.Pipeliner) { seen = p.Get(ctx, op.key) })
			if errors.Is(err, inventory.ErrSoldOut) {
				if seen != nil {
					t.Fatal("the Then ran although nothing was written")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if seen == nil {
				t.Fatal("the Then was not called")
			}
			if got, _ := seen.Int64(); got != n {
				t.Fatalf("the Then read %s = %d, want the value just written, %d", op.key, got, n)
			}
		})
	}
}

// buy runs buyers concurrent calls of sell and counts the successes; any
// error but ErrSoldOut fails the test.
func buy(t *testing.T, sell func(context.Context) (int64, error), buyers int) *atomic.Int64 {
	t.Helper()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range buyers {
		wg.Go(func() {
			if _, err := sell(context.Background()); err == nil {
				ok.Add(1)
			} else if !errors.Is(err, inventory.ErrSoldOut) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	return &ok
}
