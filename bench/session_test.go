package bench_test

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// oneServer is a Topology whose load balancer and only instance are the
// same server.
type oneServer string

func (o oneServer) URL() string            { return string(o) }
func (o oneServer) InstanceURLs() []string { return []string{string(o)} }

// A run whose requests failed at the load balancer (here "drop": cut
// connections, as an instance that dies leaves them) makes the next run
// wait until the balancer's fail timeout has passed; a clean run does not.
func TestSessionWaitsOutTheBalancersFailTimeout(t *testing.T) {
	f := &fakeApp{strategies: []string{"atomic", "drop"}}
	srv := f.start(t)
	ctx := context.Background()
	s, err := bench.Open(ctx, small(srv.URL), oneServer(srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(lock string) (bench.Row, time.Duration) {
		t.Helper()
		start := time.Now()
		row, err := s.Run(ctx, lock, "testLock", bench.Shape{})
		if err != nil {
			t.Fatal(err)
		}
		return row, time.Since(start)
	}
	run("atomic")
	_, clean := run("atomic") // after a clean run
	if row, _ := run("drop"); row.Codes["error"] == 0 {
		t.Fatalf("the drop run had no failed request: %+v", row.Codes)
	}
	_, after := run("atomic") // after failures
	if after < bench.LBFailTimeout || after <= clean {
		t.Errorf("the run after failed requests took %s, after a clean one %s: want it to wait out the balancer's %s first",
			after, clean, bench.LBFailTimeout)
	}
}

// The wait is nginx.conf's fail_timeout: the two must agree.
func TestLBFailTimeoutIsNginxs(t *testing.T) {
	conf, err := os.ReadFile("../nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	found := regexp.MustCompile(`fail_timeout=(\w+)`).FindAllSubmatch(conf, -1)
	if len(found) == 0 {
		t.Fatal("nginx.conf sets no fail_timeout")
	}
	for _, m := range found {
		if d, err := time.ParseDuration(string(m[1])); err != nil || d != bench.LBFailTimeout {
			t.Errorf("nginx.conf: fail_timeout=%s, the session waits %s", m[1], bench.LBFailTimeout)
		}
	}
}
