package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// TestEmbeddedFallbackServesEveryRung is the no-dependency path: the
// embedded miniredis and the built-in proxy, as `make demo` runs them
// where redis-server and nginx are missing. At 100 concurrent requests
// every lock must serve: no 503 (a lock not had in time), every safe lock
// exact with a legal history, and the unsafe ones still caught. (Before
// the embedded server reused its Lua states, reentrant answered 503 to a
// third of such requests.)
func TestEmbeddedFallbackServesEveryRung(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{
		Dir: t.TempDir(), Instances: 3, LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: stack.Embedded, LB: stack.Embedded,
		AppBinary: appBinary, NginxConf: "../nginx.conf", Log: logWriter{t},
	})
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
	const requests, concurrency, stock = 600, 100, 200
	rows, err := bench.Run(ctx, bench.Config{
		URL: st.URL(), Requests: requests, Concurrency: concurrency, Stock: stock,
		Instances: st.InstanceURLs(), HistoryDir: t.TempDir(),
	})
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	var table strings.Builder
	bench.WriteTable(&table, rows)
	t.Log("\n" + table.String())
	if len(rows) != 26 {
		t.Fatalf("%d rows, want every lock on both endpoints (26)", len(rows))
	}
	for _, r := range rows {
		if n := r.Codes["503"]; n > 0 {
			t.Errorf("%s/%s: %d answers of 503: the lock was not had in time", r.Lock, r.Endpoint, n)
		}
		switch r.Lock {
		case "none", "local":
			if r.Verdict == bench.VerdictSafe {
				t.Errorf("%s/%s: SAFE, want the race to show", r.Lock, r.Endpoint)
			}
		default:
			if r.Verdict != bench.VerdictSafe || r.Linearizable != "ok" || r.OK+r.Codes["409"] != requests {
				t.Errorf("%s/%s: verdict %s, history %s, ok %d, codes %v: want SAFE, ok, every request answered 200 or sold out",
					r.Lock, r.Endpoint, r.Verdict, r.Linearizable, r.OK, r.Codes)
			}
		}
	}
}
