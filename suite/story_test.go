package suite_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/suite"
)

var update = flag.Bool("update", false, "rewrite docs/ladder.md's generated table")

const (
	tableBegin = "<!-- generated from lock.Info and suite's scenarios by `go test ./suite -run TestLadderDoc -update`: edit those, not this -->\n"
	tableEnd   = "<!-- end of the generated table -->"
)

// docs/ladder.md's table of rungs says what the page, /strategies and the
// demo say: the rungs' own Info and the scenarios' About, one source.
func TestLadderDocAgreesWithTheSource(t *testing.T) {
	const path = "../docs/ladder.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, tableBegin), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated table (between %q and %q)", path, strings.TrimSpace(tableBegin), tableEnd)
	}
	want := suite.LadderTable()
	got := doc[i+len(tableBegin) : j]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(tableBegin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's table differs from lock.Info and the scenarios: run go test ./suite -run TestLadderDoc -update\n got:\n%s\nwant:\n%s", path, got, want)
}

// Every rung has a flaw and a mechanism to say, and every pair of the
// ladder of flaws a scenario to tell.
func TestStoriesAreWhole(t *testing.T) {
	for _, p := range suite.Flaws() {
		st := suite.StoryFor(p.Lock, p.Scenario)
		if st.Does == "" || st.Flaw == "" || st.Did == "" {
			t.Errorf("%s under %s: story %+v has a gap", p.Lock, p.Scenario, st)
		}
	}
}

// A story says a lock TTL only of a rung whose lock has a lease: setnx
// under crash is told the crash, not the 200ms its lock never reads.
func TestStoriesSayLeasesTrue(t *testing.T) {
	if did := suite.StoryFor("setnx", "crash").Did; strings.Contains(did, "TTL") || !strings.HasPrefix(did, "a few requests crash their instance") {
		t.Errorf("setnx under crash: %q, want the crash and no TTL", did)
	}
	if did := suite.StoryFor("setnx-expire", "crash").Did; !strings.HasPrefix(did, "lock TTL 200ms; ") {
		t.Errorf("setnx-expire under crash: %q, want its lease said", did)
	}
	for _, p := range suite.Flaws() {
		if st := suite.StoryFor(p.Lock, p.Scenario); st.Did == "" || strings.HasPrefix(st.Did, ";") || strings.HasPrefix(st.Did, ",") {
			t.Errorf("%s under %s: %q", p.Lock, p.Scenario, st.Did)
		}
	}
}
