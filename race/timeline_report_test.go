package race_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/race"
)

// hostile is a name no instance should have, which the report must show
// as text.
const hostile = `</script><img src=x onerror="window.pwned=1">`

// reportRows are a ladder's runs as the demo has them: check-del under
// check-pause oversold (two holders wrote at once, one instance named
// hostile), fenced under pause safe with a stale write refused, lua
// under slow safe, setnx under crash deadlocked, and none on /testLock
// with a lock named hostile, which lost updates.
func reportRows(began time.Time, n int) []bench.Row {
	ms := func(d float64) int64 { return began.UnixNano() + int64(d*float64(time.Millisecond)) }
	var held []contract.Section
	for i := range n {
		inst := []string{"app1", "app2", hostile}[i%3]
		at := float64(i) * 2
		held = append(held, contract.Section{Instance: inst, Lock: "check-del", Key: "lock:stock", Acquired: ms(at), Released: ms(at + 1.5), Wrote: true})
	}
	held = append(held, contract.Section{Instance: "app2", Lock: "check-del", Key: "lock:stock", Acquired: ms(10.5), Released: ms(11.5), Wrote: true})
	slices.SortStableFunc(held, func(a, b contract.Section) int { return int(a.Acquired - b.Acquired) })
	fenced := []contract.Section{
		{Instance: "app1", Lock: "fenced", Key: "lock:stock", Token: 7, Acquired: ms(0), Released: ms(900), Refused: true},
		{Instance: "app2", Lock: "fenced", Key: "lock:stock", Token: 8, Acquired: ms(300), Released: ms(302), Wrote: true},
	}
	return []bench.Row{
		{Scenario: "check-pause", Lock: "check-del", Endpoint: bench.EndpointSale, Verdict: bench.VerdictOversold, Expected: bench.VerdictOversold,
			Oversold: 3, Overlaps: 1, Sections: len(held), Began: began, Held: held,
			Faults: []bench.Fault{{About: "fault=check-pause&pause=200ms<b>", Call: int64(time.Millisecond), Return: int64(220 * time.Millisecond), Instance: hostile, Code: 200}}},
		{Scenario: "pause", Lock: "fenced", Endpoint: bench.EndpointSale, Verdict: bench.VerdictSafe, Expected: bench.VerdictSafe,
			Sections: 2, Began: began, Held: fenced,
			Faults: []bench.Fault{{About: "fault=pause&pause=800ms", Call: 0, Return: int64(901 * time.Millisecond), Instance: "app1", Code: 409}}},
		{Scenario: "slow", Lock: "lua", Endpoint: bench.EndpointSale, Verdict: bench.VerdictSafe, Expected: bench.VerdictOversold,
			Sections: 1, Began: began, Held: held[:1]},
		{Scenario: "crash", Lock: "setnx", Endpoint: bench.EndpointSale, Verdict: bench.VerdictDeadlock, Expected: bench.VerdictDeadlock,
			Sections: 1, Began: began, Held: held[:1]},
		{Scenario: "normal", Lock: hostile, Endpoint: bench.EndpointTestLock, Verdict: bench.VerdictLostUpdates, LostUpdates: 4,
			Sections: 2, Began: began, Held: held[:2]},
	}
}

var dataRE = regexp.MustCompile(`(?s)<script type="application/json" class="tl-data">(.*?)</script>`)

// TestReportTimelines: the demo's HTML report draws the timeline of each
// run that oversold or lost updates, and of each whose fence refused a
// stale write, each from its sections as race.TimelineOf lays them out,
// embedded as JSON the page's script reads; what the run named (an
// instance, a fault, a lock) is escaped: no markup of its own reaches the
// report. A run of thousands of sections adds its data, not a node per
// section.
func TestReportTimelines(t *testing.T) {
	rows := reportRows(time.Unix(1000, 0), 30)
	html := string(race.ReportTimelines(rows))
	if strings.Contains(html, "<img") || strings.Contains(html, "<svg") || strings.Contains(html, "<b>") {
		t.Fatalf("a name from the run reached the report as markup:\n%s", html)
	}
	if !strings.Contains(html, "function makeTimeline(") || strings.Contains(html, "innerHTML") {
		t.Errorf("the report does not carry the timeline's script, or writes markup with it")
	}
	got := dataRE.FindAllStringSubmatch(html, -1)
	if len(got) != 3 {
		t.Fatalf("%d timelines, want 3 (check-del oversold, fenced refused, none lost updates)", len(got))
	}
	for i, row := range []bench.Row{rows[0], rows[1], rows[4]} {
		var tl race.Timeline
		if err := json.Unmarshal([]byte(got[i][1]), &tl); err != nil {
			t.Fatalf("timeline %d: %v\n%s", i, err, got[i][1])
		}
		want := race.TimelineOf(row)
		if !slices.Equal(tl.Sections, want.Sections) || !slices.Equal(tl.Pairs, want.Pairs) || !slices.Equal(tl.Instances, want.Instances) ||
			tl.Refused != want.Refused || tl.Overlaps != want.Overlaps || tl.LeaseMs != want.LeaseMs {
			t.Errorf("timeline %d (%s under %s) is not its run's:\n got %+v\nwant %+v", i, row.Lock, row.Scenario, tl, *want)
		}
	}
	var first race.Timeline
	json.Unmarshal([]byte(got[0][1]), &first)
	if !slices.Contains(first.Instances, hostile) || first.Faults[0].About != rows[0].Faults[0].About || len(first.Pairs) != 1 {
		t.Errorf("check-del's timeline lost what its run named, or its overlap: %+v", first)
	}
	if first.LeaseMs == 0 {
		t.Error("check-del under check-pause: no lease, want check-pause's -lock-ttl")
	}
	var fenced race.Timeline
	json.Unmarshal([]byte(got[1][1]), &fenced)
	if fenced.Refused != 1 || fenced.Sections[0][4]&race.FlagRefused == 0 {
		t.Errorf("fenced's stale write is not marked refused: %+v", fenced)
	}
	for _, want := range []string{"check-pause", "3 sold beyond the stock", "1 critical section wrote while another", "the fence refused 1 stale write", "4 updates lost", "✓ as the ladder says"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	if none := race.ReportTimelines(rows[2:4]); none != "" {
		t.Errorf("lua safe and setnx deadlocked, neither refused: want no timelines, got %d bytes", len(none))
	}

	// Thousands of sections: the data grows, the markup does not.
	small := string(race.ReportTimelines(rows[:1]))
	big := string(race.ReportTimelines(reportRows(time.Unix(1000, 0), 20000)[:1]))
	tags := func(s string) int { return strings.Count(s, "<") }
	perSection := float64(len(big)-len(small)) / (20000 - 30)
	if tags(big) != tags(small) || perSection > 40 {
		t.Errorf("20000 sections: %d tags (30 sections: %d), %.1f bytes a section", tags(big), tags(small), perSection)
	}
	t.Logf("report: %d bytes for 31 sections, %d for 20001 (%.1f bytes a section)", len(small), len(big), perSection)
}

// TestReportTimelinesInTheReport: the demo's report, written as
// bench.WriteHTML writes it, carries the timelines after the grid.
func TestReportTimelinesInTheReport(t *testing.T) {
	rows := reportRows(time.Unix(1000, 0), 30)
	var b strings.Builder
	err := bench.WriteHTML(&b, rows, bench.Meta{Started: time.Unix(1000, 0)},
		bench.HTMLSection{Title: "grid", Body: "<p>grid</p>"},
		bench.HTMLSection{Title: "timelines", Body: race.ReportTimelines(rows)})
	if err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if n := len(dataRE.FindAllString(html, -1)); n != 3 || strings.Index(html, "<p>grid</p>") > strings.Index(html, "tl-data") {
		t.Errorf("%d timelines in the report, or before the grid", n)
	}
	if strings.Contains(html, "<img") {
		t.Error("a name from the run reached the report as markup")
	}
}
