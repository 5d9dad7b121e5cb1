package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// viaLB runs the same N operations at C concurrency through a stack:
// three app instances behind the load balancer (nginx when installed),
// on a Redis and five masters of their own, one bench.Run over locks on
// the /testLock endpoint (the app's GET+SET under the lock). The app's
// lease and wait bound are cfg's, so that a request waits as long as a
// direct operation does. Its rows say via "nginx" (or the Go proxy that
// stands in for it), with no round trips or CPU: the app's clients are in
// other processes.
func viaLB(ctx context.Context, cfg config, o options, mode stack.Mode, locks []string) ([]row, []string, error) {
	s, err := stack.Start(ctx, stack.Config{
		Instances: 3, LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: mode, LB: stack.Auto, RequireReal: !o.embedded,
		Postgres:  pgMode(locks), // for the pg-advisory rungs
		AppBinary: o.app, NginxConf: o.nginxConf,
		AppArgs: []string{"-lock-ttl", cfg.ttl.String(), "-lock-wait", cfg.bound.String()},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the stack: %w", err)
	}
	defer s.Stop()
	summary := s.Summary()
	via := "proxy"
	if lb := summary[len(summary)-1]; strings.Contains(lb, "nginx") {
		via = "nginx"
	}
	brows, err := bench.Run(ctx, bench.Config{
		URL: s.URL(), Locks: locks, Endpoints: []string{"testLock"},
		Requests: cfg.n, Concurrency: cfg.c, Timeout: cfg.bound + cfg.bound/6,
		Instances: s.InstanceURLs(), Progress: os.Stderr, RunKey: s.RedisPassword(),
	})
	if err != nil {
		return nil, summary, err
	}
	rows := make([]row, 0, len(brows))
	for _, b := range brows {
		r := row{
			Name: b.Lock, Via: via, Settings: "the app's rung " + b.Lock + " behind " + via + ", 3 instances, the app's default wait (queue for the locks that poll)",
			Ops: b.Requests, OK: int64(b.OK), Failed: int64(b.Requests - b.OK), Counter: b.Num,
			Exact:   b.Verdict == bench.VerdictSafe,
			Seconds: b.DurationMs / 1000,
			P50ms:   b.P50Ms, P99ms: b.P99Ms, MaxMs: b.MaxMs,
			RTTPerOp: -1, RedisCPU: -1, SelfCPU: -1, Verdict: b.Verdict,
		}
		if b.DurationMs > 0 {
			r.OpsPerS = float64(b.OK) / r.Seconds // 200s per second, as direct counts successes
		}
		if b.NotRun != "" {
			r.Verdict = "NOT RUN: " + b.NotRun
		}
		rows = append(rows, r)
	}
	return rows, summary, nil
}

// pgMode starts PostgreSQL for the stack when locks name a pg-advisory
// rung (Auto: RequireReal makes it required), and none otherwise.
func pgMode(locks []string) stack.Mode {
	for _, l := range locks {
		if strings.HasPrefix(l, "pg-advisory") {
			return stack.Auto
		}
	}
	return stack.Off
}
