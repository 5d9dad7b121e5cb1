package race

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/bench/history"
	"github.com/lockladder/lockladder/contract"
)

// TestTimelineMarksOverlapsRefusalsAndFaults: two sections that wrote at
// once are a pair; a section the instance recorded as refused by the
// fence is marked refused, one that read sold out is not, even when a
// newer token was granted while it was held; an armed request's fault
// lands on the section it held.
func TestTimelineMarksOverlapsRefusalsAndFaults(t *testing.T) {
	began := time.Unix(1000, 0)
	ms := func(d int64) int64 { return began.UnixNano() + d*int64(time.Millisecond) }
	sec := func(inst string, from, to, token int64, wrote bool) contract.Section {
		return contract.Section{Instance: inst, Lock: "fenced", Key: "k", Token: token, Acquired: ms(from), Released: ms(to), Wrote: wrote}
	}
	refused := sec("app2", 0, 800, 1, false) // paused past its lease
	refused.Refused = true
	row := bench.Row{Began: began, Sections: 6, Overlaps: 1, Held: []contract.Section{
		refused,
		sec("app1", 200, 210, 2, true), // the next holders write
		sec("app3", 220, 230, 3, true),
		sec("app3", 225, 240, 4, true),  // two at once
		sec("app1", 900, 950, 5, false), // sold out while a newer token was granted: not refused
		sec("app2", 910, 920, 6, false),
	}, Faults: []bench.Fault{
		{About: "fault=pause&pause=800ms", Call: int64(-time.Millisecond), Return: int64(801 * time.Millisecond), Instance: "app2", Code: 409},
		{About: "fault=crash", Call: int64(300 * time.Millisecond), Return: int64(310 * time.Millisecond), Code: 502},
	}}
	tl := newTimeline(row, 200*time.Millisecond)
	if !slices.Equal(tl.Instances, []string{"app1", "app2", "app3"}) {
		t.Fatalf("lanes %v", tl.Instances)
	}
	if want := [][2]int{{3, 2}}; !slices.Equal(tl.Pairs, want) || tl.Overlaps != 1 {
		t.Errorf("pairs %v (overlaps %d), want %v", tl.Pairs, tl.Overlaps, want)
	}
	var flags []int64
	for _, s := range tl.Sections {
		flags = append(flags, s[4])
	}
	if want := []int64{FlagRefused, FlagWrote, FlagWrote | FlagOverlap, FlagWrote | FlagOverlap, 0, 0}; !slices.Equal(flags, want) || tl.Refused != 1 {
		t.Errorf("flags %v (refused %d), want %v", flags, tl.Refused, want)
	}
	if s := tl.Sections[0]; s != [5]int64{1, 0, 800000, 1, FlagRefused} {
		t.Errorf("the paused section: %v", s)
	}
	if f := tl.Faults[0]; f.Lane != 1 || f.Section != 0 || f.AtUs != -1000 {
		t.Errorf("the pause: %+v, want on app2's lane, section 0", f)
	}
	if f := tl.Faults[1]; f.Lane != -1 || f.Section != -1 || f.Code != 502 {
		t.Errorf("the crash: %+v, want on no lane", f)
	}
	if tl.LeaseMs != 200 || tl.EndUs != 950000 || !tl.Complete {
		t.Errorf("lease %vms, end %dus, complete %v", tl.LeaseMs, tl.EndUs, tl.Complete)
	}

	// A race that held no lock (atomic), or whose instances all crashed,
	// has empty lanes, not none.
	if b, _ := json.Marshal(newTimeline(bench.Row{Began: began}, 0)); !strings.Contains(string(b), `"instances":[],"sections":[]`) {
		t.Errorf("an empty timeline: %s", b)
	}

	// The latest MaxSections only.
	row.Held = nil
	for i := range MaxSections + 10 {
		row.Held = append(row.Held, sec("app1", int64(i), int64(i), 0, true))
	}
	if tl := newTimeline(row, 0); len(tl.Sections) != MaxSections || tl.Omitted != 10 || tl.Sections[0][1] != 10000 {
		t.Errorf("%d sections, %d omitted, first at %dus", len(tl.Sections), tl.Omitted, tl.Sections[0][1])
	}
}

// A DEADLOCK's timeline carries the stuck lock: the section its holder
// died inside (cut), from its acquisition; and the requests that gave up
// (503), each on the lane of the instance that answered it. A run judged
// otherwise has no stuck lock, though a crash cut a section.
func TestTimelineStuckLockAndWaitersThatGaveUp(t *testing.T) {
	began := time.Unix(1000, 0)
	ms := func(d int64) int64 { return began.UnixNano() + d*int64(time.Millisecond) }
	cut := contract.Section{Instance: "app2", Lock: "setnx", Key: "lock:{item}:stock", Acquired: ms(30), Released: ms(150), Interrupted: true}
	row := bench.Row{Began: began, Verdict: bench.VerdictDeadlock, Sections: 2, Held: []contract.Section{
		{Instance: "app1", Lock: "setnx", Key: "lock:{item}:stock", Acquired: ms(10), Released: ms(20), Wrote: true},
		cut,
	}, Ops: []history.Op{
		{Call: int64(40 * time.Millisecond), Return: int64(5040 * time.Millisecond), Instance: "app3", Code: 503},
		{Call: int64(50 * time.Millisecond), Return: int64(5050 * time.Millisecond), Instance: "app1", Code: 503},
		{Call: int64(5 * time.Millisecond), Return: int64(25 * time.Millisecond), Instance: "app1", Code: 200},
	}}
	tl := newTimeline(row, 0)
	if tl.Interrupted != 1 || tl.Sections[1][4]&FlagInterrupted == 0 {
		t.Fatalf("the cut section is not marked: %+v", tl.Sections)
	}
	if s := tl.Stuck; s == nil || s.Section != 1 || s.FromUs != 30000 || s.Key != cut.Key || tl.Instances[s.Lane] != "app2" || s.Read {
		t.Fatalf("stuck = %+v, want app2's lock from 30 ms, not read", s)
	}
	if !slices.Equal(tl.Instances, []string{"app1", "app2", "app3"}) || len(tl.GaveUp) != 2 ||
		tl.GaveUp[0] != [3]int64{2, 40000, 5040000} || tl.GaveUp[1] != [3]int64{0, 50000, 5050000} || tl.EndUs != 5050000 {
		t.Fatalf("lanes %v, gave up %v, end %d: want app3's and app1's 503s, the race to 5050 ms", tl.Instances, tl.GaveUp, tl.EndUs)
	}
	if !strings.Contains(string(ReportTimelines([]bench.Row{row})), "app2 died holding the lock at 30.0 ms") {
		t.Error("the report draws no timeline of the DEADLOCK, or does not say whose lock stuck")
	}
	row.Verdict = bench.VerdictSafe
	if tl := newTimeline(row, 0); tl.Stuck != nil || tl.Interrupted != 1 {
		t.Errorf("a SAFE run with a stuck lock %+v", tl.Stuck)
	}
}
