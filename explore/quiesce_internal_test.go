package explore

import "testing"

// TestBlockedKnowsWhatWaits: a goroutine counts as still only in a state
// that waits for another goroutine. The garbage collector's states (an
// allocation waiting to assist it, or for the world it stops, which the
// stack shows as semacquire) end on their own, and a world judged still
// while one of the steps' goroutines sat in them ran on after the search
// had read it (a data race on a client's phase, under -race with the
// CPU busy).
func TestBlockedKnowsWhatWaits(t *testing.T) {
	for head, want := range map[string]bool{
		"goroutine 7 [chan receive]:":             true,
		"goroutine 7 [chan receive, 2 minutes]:":  true,
		"goroutine 7 [select]:":                   true,
		"goroutine 7 [select, locked to thread]:": true,
		"goroutine 7 [IO wait]:":                  true,
		"goroutine 7 [sync.WaitGroup.Wait]:":      true,
		"goroutine 7 [chan receive (nil chan)]:":  true,
		"goroutine 7 [running]:":                  false,
		"goroutine 7 [runnable]:":                 false,
		"goroutine 7 [syscall]:":                  false,
		"goroutine 7 [preempted]:":                false,
		"goroutine 7 [GC assist wait]:":           false,
		"goroutine 7 [semacquire]:":               false,
		"goroutine 7 [sleep]:":                    false,
		"goroutine 7":                             false,
	} {
		if got := blocked([]byte(head)); got != want {
			t.Errorf("blocked(%q) = %v, want %v", head, got, want)
		}
	}
}
