package handlers

import (
	"errors"
	"testing"
	"time"
)

// BenchmarkMetricsPerRequest is what the metrics add to every locked
// request: one acquisition counted with its wait, one section's time.
func BenchmarkMetricsPerRequest(b *testing.B) {
	m := newMetrics(nil)
	var notHad = errors.New("x")
	for i := range b.N {
		if i%100 == 0 {
			m.obtained("lua", time.Millisecond, notHad)
			continue
		}
		m.obtained("lua", time.Millisecond, nil)
		m.held("lua", 2*time.Millisecond)
	}
}
