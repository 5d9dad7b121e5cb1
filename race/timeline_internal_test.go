package race

import (
	"encoding/json"
	"slices"
	"strconv"
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

// A fault is drawn only where it struck: an armed request that gave up
// (503) armed nothing, and a crash's request that was answered did not
// crash; a hook always ran.
func TestTimelineMarksOnlyFaultsThatStruck(t *testing.T) {
	began := time.Unix(1000, 0)
	ms := func(d int64) int64 { return int64(time.Duration(d) * time.Millisecond) }
	row := bench.Row{Began: began, Lock: "setnx", Verdict: bench.VerdictDeadlock, Faults: []bench.Fault{
		{About: "fault=crash", Call: ms(100), Return: ms(1100), Instance: "app2", Code: 503}, // gave up
		{About: "fault=crash", Call: ms(200), Return: ms(210), Code: 502},                    // crashed
		{About: "fault=crash", Call: ms(300), Return: ms(310), Instance: "app1", Code: 200},  // answered: no crash
		{About: "fault=pause&pause=800ms", Call: ms(400), Return: ms(1300), Instance: "app3", Code: 200},
		{About: "fault=pause&pause=800ms", Call: ms(500), Return: ms(3000), Instance: "app3", Code: 503},
		{About: "stop 2 of 5 masters", Hook: true, Call: ms(600), Return: ms(700)},
	}}
	tl := newTimeline(row, 0)
	var drawn []string
	for _, f := range tl.Faults {
		drawn = append(drawn, f.About+"@"+strconv.FormatInt(f.AtUs/1000, 10))
	}
	if want := []string{"fault=crash@200", "fault=pause&pause=800ms@400", "stop 2 of 5 masters@600"}; !slices.Equal(drawn, want) {
		t.Errorf("faults drawn %v, want %v: only those that struck", drawn, want)
	}
	if tl.Lease != "no lease: the lock is held until its holder lets it go" || tl.LeaseMs != 0 {
		t.Errorf("setnx's timeline: lease %q (%v ms), want no lease", tl.Lease, tl.LeaseMs)
	}
}

// setnx-expire's holder dies between SETNX and EXPIRE, before its
// section began: its DEADLOCK still draws the stuck lock, from the crash
// of the armed request that took it, on no lane when none answered it.
func TestTimelineStuckBeforeTheSection(t *testing.T) {
	began := time.Unix(1000, 0)
	ms := func(d int64) int64 { return began.UnixNano() + d*int64(time.Millisecond) }
	row := bench.Row{Began: began, Lock: "setnx-expire", Verdict: bench.VerdictDeadlock, Sections: 1, Held: []contract.Section{
		{Instance: "app1", Lock: "setnx-expire", Key: "lock:{item}:stock", Acquired: ms(10), Released: ms(20), Wrote: true},
	}, Faults: []bench.Fault{
		{About: "fault=crash-before-expire", Call: int64(40 * time.Millisecond), Return: int64(60 * time.Millisecond), Code: 502},
	}}
	tl := newTimeline(row, 200*time.Millisecond)
	s := tl.Stuck
	if s == nil || s.Section != -1 || s.Fault != 0 || s.Lane != -1 || s.FromUs != 60000 || s.Key != "lock:{item}:stock" {
		t.Fatalf("stuck %+v: want the lock from the crash at 60 ms, on no lane", s)
	}
	if note := string(ReportTimelines([]bench.Row{row})); !strings.Contains(note, "crashed at 60.0 ms having taken the lock, before its section began") {
		t.Errorf("the report does not draw or tell the stuck lock: %s", note)
	}
	if tl.Lease != "lease 200 ms" {
		t.Errorf("lease %q", tl.Lease)
	}
}

// A race that stopped early says so: when, after how many of the
// requests planned, and why; the report says it beside the timeline.
func TestTimelineSaysItStoppedEarly(t *testing.T) {
	began := time.Unix(1000, 0)
	ms := func(d int64) int64 { return began.UnixNano() + d*int64(time.Millisecond) }
	cut := contract.Section{Instance: "app2", Lock: "setnx", Key: "lock:{item}:stock", Acquired: ms(30), Released: ms(150), Interrupted: true}
	row := bench.Row{Began: began, Lock: "setnx", Verdict: bench.VerdictDeadlock, Sections: 1, Held: []contract.Section{cut},
		Requests: 184, Planned: 600, Stopped: true, StoppedMs: 2150.5, StopReason: "no request got through the lock for 2.1s after the first fault, past the scenario's bound of 2s: the run stopped sending"}
	tl := newTimeline(row, 0)
	if st := tl.Stopped; st == nil || st.AtUs != 2150500 || st.Sent != 184 || st.Planned != 600 || st.Reason != row.StopReason || tl.EndUs < st.AtUs {
		t.Fatalf("stopped %+v (end %d)", st, tl.EndUs)
	}
	if note := string(ReportTimelines([]bench.Row{row})); !strings.Contains(note, "stopped early at 2150.5 ms, after 184 of the 600 requests planned: no request got through the lock") {
		t.Errorf("the report does not say the race stopped early: %s", note)
	}
	row.Stopped = false
	if tl := newTimeline(row, 0); tl.Stopped != nil {
		t.Errorf("a race that ran to its end: stopped %+v", tl.Stopped)
	}
}

// Each rung's lease is told as it is: the scenario's for the rungs that
// take one, the server's own for ZooKeeper and etcd, none for setnx and
// the databases' locks, no lock for atomic.
func TestLeaseTrueOfEachRung(t *testing.T) {
	for _, c := range []struct {
		lock, kind, text string
		lease            time.Duration
	}{
		{"setnx", "none", "no lease: the lock is held until its holder lets it go", 200 * time.Millisecond},
		{"pg-advisory", "none", "no lease: the lock is held until its holder lets it go", 200 * time.Millisecond},
		{"lua", "scenario", "lease 200 ms", 200 * time.Millisecond},
		{"lua", "scenario", "lease: the instances' own (-lock-ttl)", 0},
		{"zookeeper", "own", "lease: the ZooKeeper session's timeout", 200 * time.Millisecond},
		{"atomic", "no-lock", "no lock", 0},
		{"none", "no-lock", "no lock", 0},
	} {
		info, ok := rungInfo(c.lock)
		if !ok {
			t.Fatalf("no rung %s", c.lock)
		}
		if got := leaseOf(info); got.Kind != c.kind {
			t.Errorf("%s: lease kind %q, want %q", c.lock, got.Kind, c.kind)
		}
		if got := leaseText(c.lock, c.lease); got != c.text {
			t.Errorf("%s with %v: %q, want %q", c.lock, c.lease, got, c.text)
		}
	}
	if l := scenarioLease("crash", "setnx"); l != 0 {
		t.Errorf("setnx under crash: a lease of %v, want none", l)
	}
}
