package stack_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

func TestSupervisorRestartsKilledInstance(t *testing.T) {
	needApp(t)
	log := &syncBuffer{}
	s, err := stack.Start(context.Background(), stack.Config{
		LBAddr:    "127.0.0.1:0",
		RedisAddr: "127.0.0.1:0",
		Redis:     stack.Embedded,
		LB:        stack.Embedded,
		AppBinary: appBin,
		Log:       log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	before := s.Pids()
	victim := s.InstancePids()[1] // app2
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		now := s.Pids()
		if s.Restarts() == 1 && !slices.Contains(now, victim) && strings.Contains(log.String(), "app2: healthy again") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("app2 not restarted: restarts %d, pids %v -> %v\n%s", s.Restarts(), before, now, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, inst, body := get(t, http.MethodGet, s.InstanceURLs()[1]+"/healthz"); code != http.StatusOK || inst != "app2" {
		t.Fatalf("restarted app2: %d %q %s", code, inst, body)
	}
	if !strings.Contains(strings.Join(s.Summary(), "\n"), "1 instance restart") {
		t.Errorf("Summary() does not mention the restart: %q", s.Summary())
	}
	pids := s.Pids()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Restarts() != 1 {
		t.Errorf("Stop counted as a crash: Restarts() = %d", s.Restarts())
	}
	redistest.Dead(t, pids)
	t.Logf("supervisor log:\n%s", log)
}
