// Package cost guards what each rung costs, as the lab guards its
// verdicts: a regression that makes a rung thirty times slower fails a
// check instead of waiting for someone to read the demo's table.
//
// Absolute figures do not travel between machines, nor between two runs
// on a shared one, so a rung's cost is taken as ratios to a reference
// rung's (atomic: no lock at all) in the same run, on the same endpoint:
// its throughput over the reference's, and its p99 latency over the
// reference's. A Baseline of those ratios is committed in the repository
// (baseline.json beside this file); Check compares a run's ratios with
// it and names every rung whose throughput ratio fell, or whose p99 ratio
// rose, by more than a Bound.
package cost

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/lockladder/lockladder/bench"
)

// Reference is the rung every ratio is taken against: atomic sells with
// one Lua script and takes no lock, the cheapest way through the stack.
const Reference = "atomic"

// Ratio is a rung's cost on one endpoint relative to the reference's in
// the same run: RPS is its throughput over the reference's (below 1:
// slower), P99 its 99th percentile latency over the reference's (above 1:
// a longer tail).
type Ratio struct {
	RPS float64 `json:"rps"`
	P99 float64 `json:"p99"`
}

// Key names a rung on an endpoint: "pg-advisory/sale".
func Key(lock, endpoint string) string { return lock + "/" + endpoint }

// Figures are a run's raw figures, kept beside its ratios in a check's
// report so that the spread can be studied again without a rerun.
type Figures struct {
	Lock     string  `json:"lock"`
	Endpoint string  `json:"endpoint"`
	RPS      float64 `json:"rps"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	Verdict  string  `json:"verdict"`
	// Reference marks a run of the reference rung.
	Reference bool `json:"reference,omitempty"`
}

// FiguresOf keeps rows' figures, in their order.
func FiguresOf(rows []bench.Row) []Figures {
	out := make([]Figures, 0, len(rows))
	for _, r := range rows {
		if r.Verdict == bench.VerdictNotRun {
			continue
		}
		out = append(out, Figures{Lock: r.Lock, Endpoint: r.Endpoint, RPS: r.RPS, P50Ms: r.P50Ms, P99Ms: r.P99Ms,
			Verdict: r.Verdict, Reference: r.Lock == Reference})
	}
	return out
}

// Ratios are the ratios of every run in figs but the reference's, by Key.
// Each run is divided by the reference runs on its endpoint that bracket
// it (the last before it and the first after it, their geometric mean):
// the load of a shared machine drifts over a check's minutes, and a
// rung is compared with the reference as the machine was around its own
// run. A rung run more than once keeps its best throughput ratio and its
// best p99 ratio: a busy machine only ever makes a run slower, so the
// best of two runs is the nearer to what the code costs, while a
// regression slows every run.
func Ratios(figs []Figures) (map[string]Ratio, error) {
	out := map[string]Ratio{}
	for i, f := range figs {
		if f.Reference {
			continue
		}
		before, after := bracket(figs, i)
		var refs []Figures
		for _, j := range []int{before, after} {
			if j >= 0 {
				refs = append(refs, figs[j])
			}
		}
		if len(refs) == 0 {
			return nil, fmt.Errorf("cost: no %s run on %s to compare %s with", Reference, f.Endpoint, f.Lock)
		}
		refRPS, refP99 := 0.0, 0.0
		for _, r := range refs {
			refRPS += math.Log(r.RPS)
			refP99 += math.Log(r.P99Ms)
		}
		refRPS, refP99 = math.Exp(refRPS/float64(len(refs))), math.Exp(refP99/float64(len(refs)))
		if !(f.RPS > 0 && f.P99Ms > 0 && refRPS > 0 && refP99 > 0) {
			return nil, fmt.Errorf("cost: %s: no figures to compare (%.0f req/s, p99 %.1f ms; %s %.0f req/s, p99 %.1f ms)",
				Key(f.Lock, f.Endpoint), f.RPS, f.P99Ms, Reference, refRPS, refP99)
		}
		k := Key(f.Lock, f.Endpoint)
		r := Ratio{RPS: f.RPS / refRPS, P99: f.P99Ms / refP99}
		if best, ok := out[k]; ok {
			r = Ratio{RPS: max(best.RPS, r.RPS), P99: min(best.P99, r.P99)}
		}
		out[k] = r
	}
	return out, nil
}

// bracket is the index of the last reference run on figs[i]'s endpoint
// before i and of the first after it, -1 where there is none.
func bracket(figs []Figures, i int) (before, after int) {
	before, after = -1, -1
	for j := i - 1; j >= 0; j-- {
		if figs[j].Reference && figs[j].Endpoint == figs[i].Endpoint {
			before = j
			break
		}
	}
	for j := i + 1; j < len(figs); j++ {
		if figs[j].Reference && figs[j].Endpoint == figs[i].Endpoint {
			after = j
			break
		}
	}
	return before, after
}

// Median is, for every key of every run, the median of its ratios over
// the runs that have it: a baseline taken from several runs, so that no
// one run's noise is committed.
func Median(runs []map[string]Ratio) map[string]Ratio {
	all := map[string][]Ratio{}
	for _, r := range runs {
		for k, v := range r {
			all[k] = append(all[k], v)
		}
	}
	out := make(map[string]Ratio, len(all))
	for k, vs := range all {
		rps := make([]float64, len(vs))
		p99 := make([]float64, len(vs))
		for i, v := range vs {
			rps[i], p99[i] = v.RPS, v.P99
		}
		out[k] = Ratio{RPS: median(rps), P99: median(p99)}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return math.Sqrt(s[n/2-1] * s[n/2]) // geometric: ratios
}

// Size is the load of every run of a check: the baseline's ratios hold
// only for runs of the same size.
type Size struct {
	Requests    int `json:"requests"`
	Concurrency int `json:"concurrency"`
	Stock       int `json:"stock"`
}

// Baseline is the committed record of what each rung costs, relative to
// the reference.
type Baseline struct {
	// About says what the file is and how it is rewritten.
	About     string `json:"about"`
	Reference string `json:"reference"`
	Size
	// Runs is how many checks the ratios are the median of; Commit and
	// Host what they ran on.
	Runs   int    `json:"runs"`
	Commit string `json:"commit,omitempty"`
	Host   string `json:"host,omitempty"`
	// Ratios are by Key, every rung on every endpoint.
	Ratios map[string]Ratio `json:"ratios"`
}

// About is Baseline.About's text.
const About = "Each rung's throughput and p99 as ratios to atomic's in the same run (bench check); " +
	"rewritten by make bench-baseline, and its diff reviewed like code."

// ReadBaseline reads the baseline at path.
func ReadBaseline(path string) (Baseline, error) {
	var b Baseline
	data, err := os.ReadFile(path)
	if err != nil {
		return b, fmt.Errorf("cost: the baseline: %w (make bench-baseline writes one)", err)
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("cost: the baseline %s: %w", path, err)
	}
	if b.Reference != Reference {
		return b, fmt.Errorf("cost: the baseline %s compares with %q, this check with %q: make bench-baseline", path, b.Reference, Reference)
	}
	if len(b.Ratios) == 0 {
		return b, fmt.Errorf("cost: the baseline %s holds no ratios: make bench-baseline", path)
	}
	return b, nil
}

// WriteBaseline writes b to path, its keys in order and its ratios to
// three significant figures (no run is closer than that), for a readable
// diff.
func WriteBaseline(path string, b Baseline) error {
	b.About, b.Reference = About, Reference
	rounded := make(map[string]Ratio, len(b.Ratios))
	for k, r := range b.Ratios {
		rounded[k] = Ratio{RPS: sig3(r.RPS), P99: sig3(r.P99)}
	}
	b.Ratios = rounded
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Bound is how far a ratio may move, as a factor, before a check fails:
// a rung fails when its throughput ratio falls below the baseline's
// divided by RPS, or its p99 ratio rises above the baseline's times P99.
type Bound struct {
	RPS float64 `json:"rps"`
	P99 float64 `json:"p99"`
}

// DefaultBound is the check's bound, chosen from the spread of the
// ratios over repeated checks of an unchanged tree, on a quiet machine
// and beside two busy loops, and from the one regression it must catch
// (MEASUREMENTS.md, issue 54): the widest move of an unchanged tree stays
// inside it, and the PostgreSQL rungs' slowdown with e76382f's fix
// undone falls outside it on every one of them
// (TestCommittedBaselineCatchesThePostgreSQLRegression). On a machine
// loaded far past its cores no bound separates the two: unchanged rungs
// there run as slowly as the regression.
var DefaultBound = Bound{RPS: 4, P99: 6}

// Failure is a rung whose cost moved past the bound.
type Failure struct {
	Key string
	// What is "throughput" or "p99"; Got and Baseline the ratios; Factor
	// how many times worse Got is; Bound the factor allowed.
	What               string
	Got, Baseline      float64
	Factor, BoundValue float64
}

func (f Failure) String() string {
	switch f.What {
	case "throughput":
		return fmt.Sprintf("%s: throughput %.3g of %s's, baseline %.3g: %.1fx slower, bound %gx",
			f.Key, f.Got, Reference, f.Baseline, f.Factor, f.BoundValue)
	case "p99":
		return fmt.Sprintf("%s: p99 %.3g times %s's, baseline %.3g: %.1fx longer, bound %gx",
			f.Key, f.Got, Reference, f.Baseline, f.Factor, f.BoundValue)
	}
	return fmt.Sprintf("%s: %s", f.Key, f.What)
}

// Check compares got with the baseline: a Failure for every rung whose
// throughput ratio fell, or p99 ratio rose, past bound; for every rung
// the baseline has and got does not (missing: it was not run), and every
// rung got has and the baseline does not (a new rung: make
// bench-baseline), a Failure saying so.
func Check(b Baseline, got map[string]Ratio, bound Bound) []Failure {
	var out []Failure
	for _, k := range sortedKeys(b.Ratios) {
		base := b.Ratios[k]
		g, ok := got[k]
		if !ok {
			out = append(out, Failure{Key: k, What: "in the baseline, not measured in this check"})
			continue
		}
		if f := g.RPS / base.RPS; f < 1/bound.RPS {
			out = append(out, Failure{Key: k, What: "throughput", Got: g.RPS, Baseline: base.RPS, Factor: 1 / f, BoundValue: bound.RPS})
		}
		if f := g.P99 / base.P99; f > bound.P99 {
			out = append(out, Failure{Key: k, What: "p99", Got: g.P99, Baseline: base.P99, Factor: f, BoundValue: bound.P99})
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := b.Ratios[k]; !ok {
			out = append(out, Failure{Key: k, What: "measured, but not in the baseline (make bench-baseline)"})
		}
	}
	return out
}

// Error joins failures into one error, nil for none.
func Error(failures []Failure) error {
	if len(failures) == 0 {
		return nil
	}
	lines := make([]string, len(failures))
	for i, f := range failures {
		lines[i] = "  " + f.String()
	}
	return errors.New("cost: " + fmt.Sprint(len(failures)) + " past the bound:\n" + strings.Join(lines, "\n"))
}

// sig3 is x to three significant figures.
func sig3(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

func sortedKeys(m map[string]Ratio) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
