// Package e2e runs the whole path: a Redis, three app instances behind a
// load balancer, and the benchmark through it, then judges every lock from
// the counters it reads back. With redis-server and nginx installed it uses
// them; under CI=true it requires them.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// appBinary is built once for every test in this package.
var appBinary string

func TestMain(m *testing.M) {
	if os.Getenv(gameLoadEnv) != "" {
		os.Exit(m.Run()) // the game benchmark's load: no stack of its own
	}
	dir, err := os.MkdirTemp("", "lockladder-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	appBinary = filepath.Join(dir, "app")
	build := exec.Command("go", "build", "-o", appBinary, "../cmd/app")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build app:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// stacks starts the stacks of a suite (the matrix, the fault suite) from
// one template and checks at the end that none of their processes is left.
type stacks struct {
	t       *testing.T
	mu      sync.Mutex
	started []*stack.Stack
}

// template is the stack every suite's stacks derive from.
func (s *stacks) template() stack.Config {
	return stack.Config{AppBinary: appBinary, NginxConf: "../nginx.conf", Log: logWriter{s.t}}
}

// start is stack.Start, remembered.
func (s *stacks) start(ctx context.Context, c stack.Config) (suite.Stack, error) {
	st, err := stack.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.started = append(s.started, st)
	s.mu.Unlock()
	return st, nil
}

// checkGone fails the test for every process of a started stack still alive.
func (s *stacks) checkGone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.started {
		for _, pid := range st.Pids() {
			if syscall.Kill(pid, 0) == nil {
				s.t.Errorf("pid %d still alive after the suite", pid)
			}
		}
	}
}

// lane marks a test that runs on a stack of its own (free ports, its own
// run dir, its own browser) and so may run beside the others so marked:
// t.Parallel, the e2e step's -parallel bounding how many at once (the
// Makefile), so that one test's waits (a stack starting, a page polling,
// a race's load) overlap another's. Call it first in a test that starts
// everything it uses itself. The suites with lanes of their own
// (TestMatrix, TestChaos, TestChaosLibraries: stacks at once already) and
// TestEmbeddedFallbackServesEveryRung (the embedded stack's 100 requests
// at once on one process, asserting no lock wait runs out) run alone,
// before the lanes start.
func lane(t *testing.T) { t.Parallel() }

// startStack brings up the stack on free loopback ports and stops it when
// the test ends, checking that none of its processes survives.
func startStack(t *testing.T, with ...func(*stack.Config)) *stack.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := stack.Config{
		Dir:         t.TempDir(),
		Instances:   3,
		LBAddr:      "127.0.0.1:0",
		AppBasePort: 0,
		RedisAddr:   "127.0.0.1:0",
		RequireReal: redistest.CI(),
		AppBinary:   appBinary,
		NginxConf:   "../nginx.conf",
		Log:         logWriter{t},
		Races:       func(lb string, s *stack.Stack) http.Handler { return race.New(lb, s) },
	}
	for _, f := range with {
		f(&cfg)
	}
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		pids := st.Pids()
		if err := st.Stop(); err != nil {
			t.Errorf("stop stack: %v", err)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("pid %d still alive after Stop", pid)
			}
		}
	})
	return st
}

// TestLadderThroughLoadBalancer is the ab -n N -c C test of the articles,
// smaller: through the load balancer and three instances, none and local
// lose updates, lua and atomic are exact.
func TestLadderThroughLoadBalancer(t *testing.T) {
	lane(t)
	st := startStack(t)
	const requests, concurrency, stock = 1500, 60, 300
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := bench.Run(ctx, bench.Config{
		RunKey:      st.RedisPassword(),
		URL:         st.URL(),
		Locks:       []string{"none", "local", "lua", "atomic"},
		Endpoints:   []string{"sale", "testLock"},
		Requests:    requests,
		Concurrency: concurrency,
		Stock:       stock,
		Instances:   st.InstanceURLs(),
		HistoryDir:  t.TempDir(),
	})
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	var table strings.Builder
	bench.WriteTable(&table, rows)
	t.Log("\n" + table.String())

	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	for _, r := range rows {
		t.Run(r.Lock+"/"+r.Endpoint, func(t *testing.T) {
			answered := r.OK
			for _, n := range r.Codes {
				answered += n
			}
			if r.Requests != requests || answered != requests {
				t.Fatalf("requests %d, answers %d (codes %v), want %d", r.Requests, answered, r.Codes, requests)
			}
			if len(r.Instances) != 3 {
				t.Errorf("successes came from %v, want all 3 instances", r.Instances)
			}
			switch r.Lock {
			case "none", "local":
				// The lock does not exclude across instances: the race shows.
				if r.Endpoint == "sale" && (r.Verdict != "OVERSOLD" || r.Oversold <= 0) {
					t.Errorf("verdict %s, oversold %d: want OVERSOLD", r.Verdict, r.Oversold)
				}
				if r.Endpoint == "testLock" && (r.Verdict != "LOST UPDATES" || r.LostUpdates <= 0) {
					t.Errorf("verdict %s, lost %d: want LOST UPDATES", r.Verdict, r.LostUpdates)
				}
				// The checker sees it in the answers alone, and the
				// instances' own sections show two holders at once.
				if r.Linearizable != "illegal" || r.Evidence == "" || r.Overlaps == 0 || r.Sections <= 0 {
					t.Errorf("history %s (%s), overlaps %d of %d sections: want illegal, with overlaps",
						r.Linearizable, r.Evidence, r.Overlaps, r.Sections)
				}
				if html, err := os.ReadFile(r.Visualization); err != nil || !strings.Contains(string(html), "<html") {
					t.Errorf("the illegal history's view %q: %v", r.Visualization, err)
				}
			case "lua", "atomic":
				if r.Verdict != "SAFE" || r.Linearizable != "ok" || r.Overlaps != 0 || r.Visualization != "" {
					t.Errorf("verdict %s, history %s (%s), overlaps %d: want SAFE, ok, none",
						r.Verdict, r.Linearizable, r.Evidence, r.Overlaps)
				}
				// lua's sections are all there (one per request that
				// held the lock); atomic takes no lock and has none.
				if held := r.OK + r.Codes["409"]; r.Lock == "lua" && r.Sections != held || r.Lock == "atomic" && r.Sections != 0 {
					t.Errorf("%d sections read back, want %d", r.Sections, held)
				}
				if r.Endpoint == "sale" {
					// Exact: the whole stock sold, once each, and the
					// independent sold counter agrees.
					if r.OK != stock || r.Remaining != 0 || r.Sold != stock || r.Oversold != 0 {
						t.Errorf("ok %d, remaining %d, sold %d: want exactly the stock %d sold", r.OK, r.Remaining, r.Sold, stock)
					}
				} else if int64(r.OK) != r.Num || r.LostUpdates != 0 {
					t.Errorf("ok %d, num %d: want equal", r.OK, r.Num)
				}
			}
		})
	}
}
