package race

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/suite"
)

// Plan is what GET /race answers: the scenarios a race may name, and the
// ladder of flaws (suite.Flaws), each pair with the ladder's verdict and
// whether this stack can race it; the page draws its ladder view from it.
type Plan struct {
	Scenarios []PlanScenario `json:"scenarios"`
	Ladder    []Cell         `json:"ladder"`
	// Flaws are the ladder's locks' flaws (lock.Info.Flaw, as the
	// instances describe them), by lock: the grid's flaw column.
	Flaws map[string]string `json:"flaws"`
	// Leases say, by lock, whether its lock has a lease at all, and
	// which: a scenario's lease_ms is true only of the "scenario" ones.
	Leases map[string]PlanLease `json:"leases"`
}

// PlanLease is what lease a rung's lock has.
type PlanLease struct {
	// Kind is "scenario" (the lease the scenario sets, lease_ms, or the
	// instances' own without one), "own" (a lease of the lock's own
	// server: a ZooKeeper session, an etcd lease), "none" (held until its
	// holder lets go: setnx, the databases' locks) or "no-lock" (atomic).
	Kind string `json:"kind"`
	// About says it in words, for a race of the rung with no scenario.
	About string `json:"about"`
}

// PlanScenario is a scenario of the matrix: its name, what it does, the
// ladder's verdict (on /sale) for each lock it runs, and the size of its
// races by default (suite.LadderSize).
type PlanScenario struct {
	Name        string            `json:"name"`
	About       string            `json:"about"`
	Expect      map[string]string `json:"expect"`
	Requests    int               `json:"requests"`
	Concurrency int               `json:"concurrency"`
	Stock       int               `json:"stock"`
	// LeaseMS is the lease the scenario grants a lock that takes one
	// (its -lock-ttl; 0: the instances' own), for the page to say
	// before the race starts: only of the locks whose lease is of kind
	// "scenario" (Plan.Leases); the others have their own, or none.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

// Cell is one pair of the ladder of flaws.
type Cell struct {
	Scenario string `json:"scenario"`
	Lock     string `json:"lock"`
	Expected string `json:"expected"`
	// Skip says why this stack cannot race the pair ("": it can): its
	// server is missing, or the stack cannot stage the scenario.
	Skip string `json:"skip,omitempty"`
	// Reason is Skip's code: contract.ReasonServerMissing,
	// ReasonCannotStage or ReasonNotInMatrix.
	Reason string `json:"reason,omitempty"`
	// Lease is the lease the pair's race grants, in words true of the
	// rung ("lease 200 ms"; "no lease: ..." for setnx).
	Lease string `json:"lease"`
}

// plan answers GET /race.
func (s *Service) plan(w http.ResponseWriter, r *http.Request) {
	rungs, err := s.strategies(r.Context())
	if err != nil {
		fail(w, http.StatusServiceUnavailable, contract.ReasonNoRace, "the instances' ladder could not be read: "+err.Error())
		return
	}
	p := Plan{Flaws: map[string]string{}, Leases: map[string]PlanLease{}}
	for _, r := range rungs {
		p.Leases[r.Name] = leaseOf(r)
	}
	for _, sc := range suite.Scenarios() {
		ps := PlanScenario{Name: sc.Name, About: sc.About, Expect: sc.Expect}
		ps.Requests, ps.Concurrency, ps.Stock = suite.LadderSize(sc.Name)
		ps.LeaseMS = ttlOf(sc).Milliseconds()
		p.Scenarios = append(p.Scenarios, ps)
	}
	for _, f := range suite.Flaws() {
		sc, err := suite.LookupScenario(f.Scenario)
		if err != nil {
			continue
		}
		c := Cell{Scenario: f.Scenario, Lock: f.Lock, Lease: leaseText(f.Lock, scenarioLease(f.Scenario, f.Lock))}
		if i := slices.IndexFunc(rungs, func(x lock.Info) bool { return x.Name == f.Lock }); i >= 0 {
			p.Flaws[f.Lock] = rungs[i].Flaw
		}
		c.Expected, _, _ = sc.Expected(f.Lock, bench.EndpointSale)
		i := slices.IndexFunc(rungs, func(x lock.Info) bool { return x.Name == f.Lock })
		switch {
		case i < 0:
			c.Skip, c.Reason = "the instances do not offer it (GET /strategies)", contract.ReasonServerMissing
		case rungs[i].Unavailable != "":
			c.Skip, c.Reason = "unavailable here: "+rungs[i].Unavailable, contract.ReasonServerMissing
		default:
			if _, err := s.stage(sc, rungs[i], bench.EndpointSale); err != nil {
				c.Skip, c.Reason = err.Error(), contract.ReasonCannotStage
				if errors.Is(err, suite.ErrNotInMatrix) {
					c.Reason = contract.ReasonNotInMatrix
				}
			}
		}
		p.Ladder = append(p.Ladder, c)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	json.NewEncoder(w).Encode(p)
}

// leaseOf says what lease rung's lock has.
func leaseOf(rung lock.Info) PlanLease {
	switch {
	case rung.Atomic || rung.Name == "none":
		return PlanLease{"no-lock", leaseText(rung.Name, 0)}
	case rung.Lease:
		return PlanLease{"scenario", leaseText(rung.Name, 0)}
	case ownLease[rung.Name] != "":
		return PlanLease{"own", ownLease[rung.Name]}
	}
	return PlanLease{"none", leaseText(rung.Name, 0)}
}
