package contract

import (
	"testing"
	"time"
)

func TestRecorderKeepsTheLatest(t *testing.T) {
	r := NewRecorder(3)
	t0 := time.Now().UnixNano()
	for i := int64(1); i <= 5; i++ {
		r.Add(Section{Acquired: t0 + i*10})
	}
	secs, complete := r.Since(t0)
	if len(secs) != 3 || secs[0].Acquired != t0+30 || secs[2].Acquired != t0+50 || complete {
		t.Fatalf("Since(t0) = %+v complete=%v, want t0+30,40,50 and incomplete", secs, complete)
	}
	secs, complete = r.Since(t0 + 35)
	if len(secs) != 2 || secs[0].Acquired != t0+40 || !complete {
		t.Fatalf("Since(t0+35) = %+v complete=%v, want t0+40,50 and complete", secs, complete)
	}
	// Before the recorder began, nothing is known.
	if _, complete := NewRecorder(3).Since(t0 - int64(time.Hour)); complete {
		t.Fatal("a recorder started now cannot vouch for an hour ago")
	}
}

func TestRecorderHolding(t *testing.T) {
	r := NewRecorder(4)
	done := r.Hold(Section{Key: "k", Acquired: 2})
	r.Hold(Section{Key: "j", Acquired: 1})
	if h := r.Holding(); len(h) != 2 || h[0].Key != "j" || h[1].Key != "k" {
		t.Fatalf("Holding = %+v, want j then k", h)
	}
	done(Section{Key: "k", Acquired: 2, Released: 3, Wrote: true})
	if h := r.Holding(); len(h) != 1 || h[0].Key != "j" {
		t.Fatalf("after done, Holding = %+v, want only j", h)
	}
	if secs, _ := r.Since(0); len(secs) != 1 || secs[0].Released != 3 || !secs[0].Wrote {
		t.Fatalf("the section done is not recorded as over: %+v", secs)
	}
}

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
