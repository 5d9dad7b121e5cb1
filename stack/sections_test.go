package stack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// The critical sections an instance held outlive its SIGKILL: the
// restarted instance answers GET /sections with those its dead process
// closed, and the one it died inside, marked interrupted (the stuck
// setnx lock's section). Without them a crash scenario's timeline is
// empty lanes.
func TestSectionsSurviveSIGKILL(t *testing.T) {
	needApp(t)
	s, err := stack.Start(context.Background(), stack.Config{
		LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: stack.Auto, LB: stack.Embedded, Instances: 1,
		RequireReal: ci, AppBinary: appBin, Log: redistest.Log(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	app := s.InstanceURLs()[0]
	since := time.Now().UnixNano()
	if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=10"); code != 200 {
		t.Fatalf("reset: %d %s", code, body)
	}
	for range 3 {
		if code, _, body := get(t, http.MethodPost, app+"/sale?lock=lua"); code != 200 {
			t.Fatalf("sale: %d %s", code, body)
		}
	}
	// A setnx sale that sleeps inside its section, killed there.
	held := make(chan struct{})
	go func() {
		defer close(held)
		req, _ := http.NewRequest(http.MethodPost, app+"/sale?lock=setnx&work=10s", nil)
		req.Header.Set(contract.HeaderFaultKey, s.FaultKey())
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(sections(t, app, since).Holding) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the setnx sale never held its section")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(s.InstancePids()[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-held
	deadline = time.Now().Add(20 * time.Second)
	for s.Restarts() != 1 || !healthy(app) {
		if time.Now().After(deadline) {
			t.Fatalf("app1 not back: %d restarts", s.Restarts())
		}
		time.Sleep(20 * time.Millisecond)
	}

	got := sections(t, app, since)
	if len(got.Sections) != 4 || !got.Complete {
		t.Fatalf("after the kill, /sections has %d sections (complete %v), want the 3 lua ones and the setnx one cut: %+v", len(got.Sections), got.Complete, got.Sections)
	}
	for i, sec := range got.Sections[:3] {
		if sec.Lock != "lua" || !sec.Wrote || sec.Interrupted || sec.Released <= sec.Acquired {
			t.Errorf("section %d = %+v, want a lua section that wrote", i, sec)
		}
	}
	if cut := got.Sections[3]; cut.Lock != "setnx" || !cut.Interrupted || cut.Wrote || cut.Instance != "app1" || cut.Released <= cut.Acquired {
		t.Errorf("the killed section = %+v, want setnx, interrupted", cut)
	}
}

type sectionsPage struct {
	Complete bool               `json:"complete"`
	Sections []contract.Section `json:"sections"`
	Holding  []contract.Section `json:"holding"`
}

func sections(t *testing.T, app string, since int64) sectionsPage {
	t.Helper()
	code, _, body := get(t, http.MethodGet, app+"/sections?since="+strconv.FormatInt(since, 10))
	var p sectionsPage
	if err := json.Unmarshal(body, &p); code != 200 || err != nil {
		t.Fatalf("GET /sections: %d %s (%v)", code, body, err)
	}
	return p
}

func healthy(base string) bool {
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}
