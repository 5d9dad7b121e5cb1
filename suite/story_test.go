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
