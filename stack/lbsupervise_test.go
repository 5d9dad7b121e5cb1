package stack_test

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/stack"
)

// A SIGKILL of nginx's master alone leaves its workers serving, children
// of init now, with nobody to stop them: the supervisor notices the
// master's death, says so, stops those workers and starts nginx again on
// the same address, as it does a dead app.
func TestSupervisorRestartsADeadNginx(t *testing.T) {
	s, log := startStack(t, stack.Real, func(c *stack.Config) { c.Instances = 1 })
	old := s.LBPid()
	workers := stack.GroupMembers(old)
	if len(workers) < 2 {
		t.Fatalf("nginx's group %d has %v: want its master and a worker", old, workers)
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for s.LBPid() == old || !strings.Contains(log.String(), "lb: nginx restarted as pid") {
		if time.Now().After(deadline) {
			t.Fatalf("nginx not restarted 60s after its master's SIGKILL:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := log.String()
	for _, want := range []string{"lb: nginx master pid", "exited unexpectedly", "worker(s) of the dead master"} {
		if !strings.Contains(out, want) {
			t.Errorf("the supervisor did not say %q:\n%s", want, out)
		}
	}
	if left := stack.GroupMembers(old); len(left) > 0 {
		t.Errorf("the dead master's workers %v still run", left)
	}
	resp, err := http.Get(s.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz through the restarted nginx: %s", resp.Status)
	}
	if n := s.LBRestarts(); n != 1 {
		t.Errorf("LBRestarts = %d, want 1", n)
	}
	if pids := stack.GroupMembers(s.LBPid()); len(pids) < 2 {
		t.Errorf("the new nginx's group %d has %v: want its master and a worker", s.LBPid(), pids)
	}
}
