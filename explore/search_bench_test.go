package explore_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
)

// BenchmarkCohortSearch searches cohort with two clients to the end (every
// state: no budget reached), the work the same each time, so that its CPU
// per search compares one build of the explorer with another.
func BenchmarkCohortSearch(b *testing.B) {
	tg, err := explore.LookupAny("cohort")
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		ex, err := explore.New(tg, explore.Config{MaxClients: 2, Budget: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		r := ex.Run(context.Background())
		ex.Close()
		if r.Verdict != explore.None || r.Covers[0].Bound != "exhausted" {
			b.Fatalf("cohort: %s, covers %+v", r.Verdict, r.Covers)
		}
		b.ReportMetric(float64(r.Schedules), "schedules/op")
	}
}
