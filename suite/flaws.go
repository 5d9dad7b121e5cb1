package suite

import "slices"

// Pair is one lock under one scenario: a cell of the matrix's grid.
type Pair struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
}

// Flaws is the ladder of flaws: each rung of docs/ladder.md under the
// scenario that shows its flaw ("scenario that shows it"; redlock under
// both of its own), and the safe rungs under the fault they survive, in
// ladder order. Its verdicts are
// the scenarios' (Scenario.Expected): `make demo` runs these pairs after
// its throughput table, and the page's ladder view lays them out.
func Flaws() []Pair {
	return []Pair{
		{"normal", "none"},
		{"normal", "local"},
		{"crash", "setnx"},
		{"crash-before-expire", "setnx-expire"},
		{"slow", "setnx-px"},
		{"check-pause", "check-del"},
		{"slow", "lua"},
		{"crash-wait", "del-setnx"},
		{"skew", "getset"},
		{"pause", "reentrant"},
		{"pause", "redlock"},
		{"majority-crash", "redlock"}, // article 002: needs redis-server
		{"pause", "fenced"},
		{"pause", "fair"},
		{"pause", "cohort"},
		{"pause", "cohort-carry"},
		{"pause-session", "zookeeper"},
		{"pause-session", "etcd"},
		{"pause-session", "db-for-update"},
		{"session-cut", "pg-advisory"},
		{"session-cut", "pg-advisory-xact"},
		{"session-cut", "pg-advisory-fenced"},
		{"normal", "db-optimistic"},
		{"slow", "atomic"},
	}
}

// pairsOf returns the scenarios of pairs in the order of Scenarios(), and
// the locks each pairs with, in the order given.
func pairsOf(pairs []Pair) ([]Scenario, map[string][]string, error) {
	locks := map[string][]string{}
	var names []string
	for _, p := range pairs {
		if _, err := LookupScenario(p.Scenario); err != nil {
			return nil, nil, err
		}
		if !slices.Contains(names, p.Scenario) {
			names = append(names, p.Scenario)
		}
		if !slices.Contains(locks[p.Scenario], p.Lock) {
			locks[p.Scenario] = append(locks[p.Scenario], p.Lock)
		}
	}
	scs, err := pickScenarios(names)
	return scs, locks, err
}
