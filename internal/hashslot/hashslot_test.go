package hashslot_test

import (
	"testing"

	"github.com/lockladder/lockladder/internal/hashslot"
)

// TestOf: the slots Redis itself gives (CLUSTER KEYSLOT) for a few keys.
func TestOf(t *testing.T) {
	for key, want := range map[string]int{
		"foo":                  12182,
		"{user1000}.following": 3443,
		"{item}:stock":         10169,
		"lock:{item}:stock":    10169,
	} {
		if got := hashslot.Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestTagIn(t *testing.T) {
	for _, r := range [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}, {100, 100}} {
		tag, ok := hashslot.TagIn("anchor", r[0], r[1])
		if s := hashslot.Of(tag); !ok || s < r[0] || s > r[1] {
			t.Errorf("TagIn(%d, %d) = %q (slot %d), %v", r[0], r[1], tag, s, ok)
		}
	}
	if _, ok := hashslot.TagIn("anchor", 10, 9); ok {
		t.Error("TagIn of an empty range: ok")
	}
}
