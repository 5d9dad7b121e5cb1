package history

import "testing"

// BenchmarkHoldDone is what recording a critical section adds to every
// request under a lock (the handlers call Hold and its done once each).
func BenchmarkHoldDone(b *testing.B) {
	r := NewRecorder(1 << 16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			done := r.Hold(Section{Key: "k", Acquired: 1})
			done(Section{Key: "k", Acquired: 1, Released: 2})
		}
	})
}
