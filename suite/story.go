package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// Story is what the lab says beside a result: what the lock does and its
// flaw (the rung's lock.Info, the text GET /strategies serves), and what
// the scenario did (its About). The page, `make demo` and docs/ladder.md's
// table (LadderTable) all say these texts, and only these.
type Story struct {
	Lock     string `json:"lock"`
	Does     string `json:"does"`
	Flaw     string `json:"flaw"`
	Scenario string `json:"scenario,omitempty"`
	Did      string `json:"did,omitempty"`
}

// Rungs is the ladder's rungs as they are described (no server beneath:
// only their Info is read).
func Rungs() []lock.Info { return slices.Clone(rungs()) }

var rungs = sync.OnceValue(func() []lock.Info {
	return ladder.New(ladder.Backends{}, lock.Options{}, lock.RedlockOptions{}).Rungs()
})

// StoryOf is the story of rung under scenario ("": none). A rung with no
// lease (setnx, the databases' locks) is not told the scenario's lock
// TTL, which its lock never reads.
func StoryOf(rung lock.Info, scenario string) Story {
	st := Story{Lock: rung.Name, Does: rung.Summary, Flaw: rung.Flaw}
	if sc, err := LookupScenario(scenario); err == nil {
		st.Scenario, st.Did = sc.Name, sc.About
		if !rung.Lease && rung.Name != "" {
			st.Did = leaseClause.ReplaceAllString(st.Did, "")
		}
	}
	return st
}

// leaseClause is a scenario's About's opening "lock TTL 200ms; " (or
// "lock TTL 200ms (...); ", or ", " after it).
var leaseClause = regexp.MustCompile(`^lock TTL \d+m?s(?: \([^)]*\))?[;,] `)

// StoryFor is StoryOf the rung called lockName (the flaw left empty for
// a name the ladder does not have).
func StoryFor(lockName, scenario string) Story {
	for _, r := range rungs() {
		if r.Name == lockName {
			return StoryOf(r, scenario)
		}
	}
	return StoryOf(lock.Info{Name: lockName}, scenario)
}

// LadderTable is docs/ladder.md's table of every rung, generated from the
// rungs' Info and the ladder of flaws (Flaws): what each lock does, its
// flaw, the scenarios that show it and the verdict the ladder expects
// there (on /sale); then every scenario and what it does. A test keeps the doc's copy equal to it.
func LadderTable() string {
	var b strings.Builder
	b.WriteString("| lock | what it does | its flaw | shown under: the ladder says |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range Rungs() {
		var under []string
		for _, p := range Flaws() {
			if p.Lock != r.Name {
				continue
			}
			sc, err := LookupScenario(p.Scenario)
			if err != nil {
				continue
			}
			v, _, _ := sc.Expected(r.Name, bench.EndpointSale)
			under = append(under, fmt.Sprintf("%s: %s", p.Scenario, v))
		}
		if len(under) == 0 { // not in the ladder of flaws: where the matrix finds it failing
			for _, sc := range Scenarios() {
				if v, ok, _ := sc.Expected(r.Name, bench.EndpointSale); ok && v != bench.VerdictSafe {
					under = append(under, fmt.Sprintf("%s: %s", sc.Name, v))
				}
			}
		}
		if len(under) == 0 {
			under = []string{"-"}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Name, cell(r.Summary), cell(r.Flaw), strings.Join(under, "; "))
	}
	b.WriteString("\n| scenario | what it does |\n|---|---|\n")
	for _, sc := range Scenarios() {
		fmt.Fprintf(&b, "| %s | %s |\n", sc.Name, cell(sc.About))
	}
	return b.String()
}
