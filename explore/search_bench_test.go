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

// BenchmarkRedlockSearch searches Redlock on three masters to depth 9
// (its pause counterexample's), the work the same each time.
func BenchmarkRedlockSearch(b *testing.B) {
	tg, err := explore.LookupAny("redlock")
	if err != nil {
		b.Fatal(err)
	}
	tg.Masters = 3
	for range b.N {
		ex, err := explore.New(tg, explore.Config{MaxClients: 2, Depth: 9, Budget: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		r := ex.Run(context.Background())
		ex.Close()
		if r.Verdict != explore.Oversold || r.Steps != 9 {
			b.Fatalf("redlock: %s in %d steps", r.Verdict, r.Steps)
		}
		b.ReportMetric(float64(r.Schedules), "schedules/op")
	}
}
