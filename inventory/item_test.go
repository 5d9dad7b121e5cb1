package inventory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
)

// TestItemOfTheLabIsTheDefault: sku "" keeps the keys of the lab's one
// item, so that nothing changes for a request without sku=.
func TestItemOfTheLabIsTheDefault(t *testing.T) {
	it := inventory.ItemOf("")
	want := inventory.Item{Tag: inventory.ItemTag, Stock: inventory.KeyStock, Sold: inventory.KeySold, Num: inventory.KeyNum,
		StockLock: inventory.StockLock, NumLock: inventory.NumLock, StockFence: inventory.StockFence, NumFence: inventory.NumFence}
	if it != want {
		t.Fatalf("ItemOf(\"\") = %+v, want %+v", it, want)
	}
	other := inventory.ItemOf("42")
	for _, k := range []string{other.Stock, other.Sold, other.Num, other.StockLock, other.NumLock, other.StockFence, other.NumFence} {
		if !strings.Contains(k, "{item:42}") {
			t.Errorf("key %q of sku 42 lacks its hash tag {item:42}", k)
		}
	}
}

func TestParseSKU(t *testing.T) {
	for _, ok := range []string{"1", "sku-7", "A_b", strings.Repeat("x", inventory.MaxSKULen)} {
		if err := inventory.ParseSKU(ok); err != nil {
			t.Errorf("ParseSKU(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "a}b", "{x", "a b", "a*", "é", strings.Repeat("x", inventory.MaxSKULen+1)} {
		if err := inventory.ParseSKU(bad); err == nil {
			t.Errorf("ParseSKU(%q) = nil, want an error", bad)
		}
	}
}

// TestItemsAreIndependent: selling, counting and resetting one item
// leaves the others as they were, the lab's item and another whose ID
// starts the same ({item:1} and {item:10}).
func TestItemsAreIndependent(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	base := inventory.New(rdb)
	one, ten := base.Item("1"), base.Item("10")
	for s, stock := range map[*inventory.Store]int64{base: 5, one: 7, ten: 9} {
		if err := s.Reset(ctx, stock); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Set(ctx, ten.Keys().StockLock, "someone", 0)
	if _, err := one.Sell(ctx, inventory.Guard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Incr(ctx, inventory.Guard{}); err != nil {
		t.Fatal(err)
	}
	if err := one.Reset(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := one.SellAtomic(ctx); err != nil {
		t.Fatal(err)
	}
	for s, want := range map[*inventory.Store]inventory.Snapshot{
		base: {Stock: 5}, one: {Stock: 2, Sold: 1}, ten: {Stock: 9},
	} {
		if got, err := s.Snapshot(ctx); err != nil || got != want {
			t.Errorf("item %q: %+v, %v; want %+v", s.Keys().SKU, got, err, want)
		}
	}
	if rdb.Exists(ctx, ten.Keys().StockLock).Val() != 1 {
		t.Error("resetting item 1 deleted item 10's lock")
	}
}
