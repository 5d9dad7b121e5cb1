package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// ladderLanes is how many of the ladder's stacks run at once by default.
// Its runs mostly wait, not compute: for a frozen or crashed holder, for
// a business the lock serialises, for a stall long enough to be judged.
// One stack at a time left two cores mostly idle. With six, the six
// slowest jobs start together, and the longest (pause-session's, a back
// end to start and then four holders frozen 2.5s each) bounds the
// ladder; the runs, and so most of the CPU, are the same whatever the
// lanes.
const ladderLanes = 6

// ladderJob is pairs run one after the other on a fresh stack of its
// own.
type ladderJob struct {
	name  string // its stack's dir under the template's run dir
	pairs []Pair
}

// ladderSlowest are the scenarios whose runs take longest, longest
// first: a back end to start, then holders frozen 2.5s each
// (pause-session); a 20ms business the lock serialises (check-pause);
// PostgreSQL to start, then three runs (session-cut); a stall or a 3s
// business to wait out. Their jobs start first, so that the lanes end
// about together; the others follow in the ladder's order.
var ladderSlowest = []string{"pause-session", "check-pause", "session-cut", "crash-wait", "majority-crash", "crash", "crash-before-expire", "pause"}

// ladderJobs splits pairs into jobs, the slowest first (ladderSlowest):
// each pair on a stack of its own, but the pairs of a scenario whose locks
// need the same server besides Redis share one (session-cut's three
// PostgreSQL rungs), whose start takes seconds. No two jobs share a
// stack, a Redis or a key: each runs as it would alone.
func ladderJobs(pairs []Pair) ([]ladderJob, error) {
	var jobs []ladderJob
	byServer := map[string]int{} // scenario and back ends -> job
	for _, p := range pairs {
		sc, err := LookupScenario(p.Scenario)
		if err != nil {
			return nil, err
		}
		zk, db, etcd, pg := sc.backends([]string{p.Lock}, stack.Config{})
		if zk == stack.Off && db == stack.Off && etcd == stack.Off && pg == stack.Off {
			jobs = append(jobs, ladderJob{name: p.Lock, pairs: []Pair{p}})
			continue
		}
		key := fmt.Sprint(p.Scenario, zk, db, etcd, pg)
		if i, ok := byServer[key]; ok {
			jobs[i].pairs = append(jobs[i].pairs, p)
			continue
		}
		byServer[key] = len(jobs)
		jobs = append(jobs, ladderJob{name: p.Lock, pairs: []Pair{p}})
	}
	rank := func(j ladderJob) int {
		if i := slices.Index(ladderSlowest, j.pairs[0].Scenario); i >= 0 {
			return i
		}
		return len(ladderSlowest)
	}
	slices.SortStableFunc(jobs, func(a, b ladderJob) int { return rank(a) - rank(b) })
	return jobs, nil
}

// runLanes runs jobs, lanes of them at once, each as run runs it
// (RunMatrix on a stack of its own: a ladder's job, a matrix's
// scenario), and returns the rows and skips of all. After a job fails no
// other starts; those running finish, and every error is returned.
func runLanes[J any](ctx context.Context, jobs []J, lanes int,
	run func(context.Context, J) ([]bench.Row, []Skip, error)) ([]bench.Row, []Skip, error) {
	var (
		mu    sync.Mutex
		next  int
		rows  []bench.Row
		skips []Skip
		errs  []error
		wg    sync.WaitGroup
	)
	take := func() (J, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == len(jobs) || len(errs) > 0 || ctx.Err() != nil {
			var none J
			return none, false
		}
		next++
		return jobs[next-1], true
	}
	for range max(1, min(lanes, len(jobs))) {
		wg.Go(func() {
			for j, ok := take(); ok; j, ok = take() {
				r, s, err := run(ctx, j)
				mu.Lock()
				rows, skips = append(rows, r...), append(skips, s...)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return rows, skips, errors.Join(errs...)
}

// inLadderOrder sorts rows and skips in the ladder's order (Flaws),
// whatever order their jobs finished in.
func inLadderOrder(rows []bench.Row, skips []Skip) {
	order := map[Pair]int{}
	for i, p := range Flaws() {
		order[p] = i
	}
	slices.SortStableFunc(rows, func(a, b bench.Row) int {
		return order[Pair{a.Scenario, a.Lock}] - order[Pair{b.Scenario, b.Lock}]
	})
	slices.SortStableFunc(skips, func(a, b Skip) int {
		return order[Pair{a.Scenario, a.Lock}] - order[Pair{b.Scenario, b.Lock}]
	})
}

// jobStack is the template of job's stack: its own run dir, under the
// template's (Dir "" stays "": a temporary one).
func jobStack(tmpl stack.Config, j ladderJob) stack.Config {
	if tmpl.Dir != "" {
		tmpl.Dir = filepath.Join(tmpl.Dir, "ladder", j.name)
	}
	return tmpl
}
