package e2e

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// TestChaos is make chaos, reduced: every fault but the failover trials
// (package failover tests those against real sentinels), one safe lock,
// two random repeats, each fault on its own real stack. Every row must
// meet what the issue asks of its fault, and every process must be gone.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault suite takes about a minute and a half")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var stacks []*stack.Stack
	start := time.Now()
	rows, err := bench.RunChaos(ctx, bench.ChaosConfig{
		Faults:   []int{1, 2, 3, 4, 6, 7},
		Locks:    []string{"lua"},
		Requests: 300, Concurrency: 20, Stock: 100,
		Repeats: 2,
		Stack: stack.Config{
			AppBinary: appBinary,
			NginxConf: "../nginx.conf",
			Log:       logWriter{t},
		},
		RequireReal: redistest.CI(),
		Start: func(ctx context.Context, c stack.Config) (bench.Topology, error) {
			s, err := stack.Start(ctx, c)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			stacks = append(stacks, s)
			mu.Unlock()
			return s, nil
		},
		Progress:   logWriter{t},
		HistoryDir: t.TempDir(),
	})
	var table strings.Builder
	bench.WriteChaosTable(&table, rows)
	t.Logf("took %s\n%s", time.Since(start).Round(time.Second), table.String())
	if err != nil {
		t.Fatalf("chaos: %v", err)
	}
	for _, s := range stacks {
		for _, pid := range s.Pids() {
			if syscall.Kill(pid, 0) == nil {
				t.Errorf("pid %d still alive after the fault suite", pid)
			}
		}
	}

	// kill, drain, redis-stop (lua); retry trap x2; partition x3; repeats:
	// kill, drain, redis-stop (lua) and partition (redlock).
	if len(rows) != 1+1+1+2+3+4 {
		t.Fatalf("%d rows, want 12", len(rows))
	}
	for _, r := range rows {
		if !r.Pass {
			t.Errorf("fault %d %s/%s: %s; want %s", r.Fault, r.Name, r.Lock, r.Figure, r.Want)
		}
		trap := r.Fault == 4 && strings.Contains(r.Figure, "-redis-retries 3")
		if !trap && r.Violations != 0 {
			t.Errorf("fault %d %s/%s: %d violations (%+v)", r.Fault, r.Name, r.Lock, r.Violations, r.Rows)
		}
		if trap && r.Violations == 0 {
			t.Errorf("the retry trap was not caught by the checks: %s", r.Figure)
		}
		if r.Requests == 0 || r.Runs == 0 {
			t.Errorf("fault %d %s/%s ran nothing", r.Fault, r.Name, r.Lock)
		}
	}
}
