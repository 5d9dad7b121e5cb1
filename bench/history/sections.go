package history

import (
	"cmp"
	"slices"

	"github.com/lockladder/lockladder/contract"
)

// Overlaps counts the sections that wrote and began while another section
// of the same key that wrote was still held: each is a moment two holders
// believed they had the lock and both changed what it guards.
func Overlaps(secs []contract.Section) int {
	byKey := map[string][]contract.Section{}
	for _, s := range secs {
		if s.Wrote {
			byKey[s.Key] = append(byKey[s.Key], s)
		}
	}
	n := 0
	for _, ss := range byKey {
		slices.SortFunc(ss, func(a, b contract.Section) int { return cmp.Compare(a.Acquired, b.Acquired) })
		var held int64 // the latest release among the sections begun so far
		for i, s := range ss {
			if i > 0 && s.Acquired < held {
				n++
			}
			held = max(held, s.Released)
		}
	}
	return n
}
