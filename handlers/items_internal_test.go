package handlers

import (
	"strconv"
	"testing"
)

// TestItemsRemembersBoundedItems: past maxKnownItems, items found are
// asked of Redis again rather than remembered.
func TestItemsRemembersBoundedItems(t *testing.T) {
	var it items
	for i := range 2 * maxKnownItems {
		it.remember("", strconv.Itoa(i))
	}
	if n := len(it.known); n != maxKnownItems {
		t.Errorf("%d items remembered, want %d", n, maxKnownItems)
	}
	if !it.knows("", "0") || it.knows("", strconv.Itoa(maxKnownItems)) || it.knows("run1", "0") {
		t.Error("want the first items remembered, not the later ones")
	}
}
