package contract

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestRecorderKeepsTheLatest(t *testing.T) {
	r := NewRecorder(3)
	t0 := time.Now().UnixNano()
	for i := int64(1); i <= 5; i++ {
		r.Add(Section{Acquired: t0 + i*10})
	}
	p := r.Since(t0, 0)
	if secs := p.Sections; len(secs) != 3 || secs[0].Acquired != t0+30 || secs[2].Acquired != t0+50 || p.Complete || p.Next != 0 {
		t.Fatalf("Since(t0) = %+v, want t0+30,40,50 and incomplete", p)
	}
	p = r.Since(t0+35, 0)
	if secs := p.Sections; len(secs) != 2 || secs[0].Acquired != t0+40 || !p.Complete {
		t.Fatalf("Since(t0+35) = %+v, want t0+40,50 and complete", p)
	}
	// Before the recorder began, nothing is known.
	if p := NewRecorder(3).Since(t0-int64(time.Hour), 0); p.Complete {
		t.Fatal("a recorder started now cannot vouch for an hour ago")
	}

	// Over several chunks, the latest size are kept, and what was
	// forgotten is known.
	r = NewRecorder(2500)
	t0 = time.Now().UnixNano()
	for i := int64(1); i <= 5000; i++ {
		r.Add(Section{Acquired: t0 + i})
	}
	p = r.Since(t0, 0)
	if secs := p.Sections; len(secs) != 2500 || secs[0].Acquired != t0+2501 || secs[2499].Acquired != t0+5000 || p.Complete {
		t.Fatalf("Since(t0) kept %d from %d, complete %v: want 2500 from t0+2501, incomplete", len(secs), secs[0].Acquired-t0, p.Complete)
	}
	if p := r.Since(t0+2501, 0); len(p.Sections) != 2500 || !p.Complete {
		t.Fatalf("Since(t0+2501): %d, complete %v: want all 2500 kept, complete", len(p.Sections), p.Complete)
	}
}

// Pages of limit sections, each asked from the last one's Next, hand out
// every section once, the earliest acquired first, though they were
// recorded as released and some share a nanosecond.
func TestRecorderPages(t *testing.T) {
	r := NewRecorder(100)
	t0 := time.Now().UnixNano()
	var want []int64
	for i := int64(0); i < 40; i++ {
		a := t0 + (i*7)%40 // recorded out of order
		if i%5 == 0 {
			a = t0 + 10 // and many acquired in the same nanosecond
		}
		r.Add(Section{Acquired: a, Token: i})
		want = append(want, a)
	}
	slices.Sort(want)
	for _, limit := range []int{1, 3, 7, 40, 100} {
		var got []int64
		seen := map[int64]bool{}
		since, pages := t0, 0
		for {
			p := r.Since(since, limit)
			if !p.Complete {
				t.Fatalf("limit %d: page from %d incomplete", limit, since-t0)
			}
			if len(p.Sections) > limit && p.Sections[0].Acquired != p.Sections[len(p.Sections)-1].Acquired {
				t.Fatalf("limit %d: a page of %d", limit, len(p.Sections))
			}
			for _, s := range p.Sections {
				if seen[s.Token] {
					t.Fatalf("limit %d: section %d handed out twice", limit, s.Token)
				}
				seen[s.Token] = true
				got = append(got, s.Acquired)
			}
			if pages++; p.Next == 0 || pages > 100 {
				break
			}
			if p.Next <= since {
				t.Fatalf("limit %d: next %d after since %d", limit, p.Next-t0, since-t0)
			}
			since = p.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: pages gave %v, want %v", limit, got, want)
		}
	}
}

// Reading never stops recording, and sees only whole sections (run it
// with -race).
func TestRecorderReadsWhileRecording(t *testing.T) {
	r := NewRecorder(3000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				done := r.Hold(Section{Key: "k", Acquired: int64(w*5000 + i + 1)})
				done(Section{Key: "k", Acquired: int64(w*5000 + i + 1), Released: 1, Wrote: true})
			}
		}()
	}
	for range 200 {
		for _, s := range r.Since(0, 1000).Sections {
			if s.Key != "k" || s.Released != 1 || !s.Wrote {
				t.Fatalf("a section read half written: %+v", s)
			}
		}
	}
	wg.Wait()
	if n := len(r.Since(0, 0).Sections); n != 3000 {
		t.Fatalf("kept %d, want 3000", n)
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
	if secs := r.Since(0, 0).Sections; len(secs) != 1 || secs[0].Released != 3 || !secs[0].Wrote {
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
