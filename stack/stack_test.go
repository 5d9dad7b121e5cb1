package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// appBin is cmd/app built once for the package's tests.
var (
	appBin      string
	appBuildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stack-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	appBin = filepath.Join(dir, "app")
	build := exec.Command("go", "build", "-o", appBin, "./cmd/app")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		appBuildErr = fmt.Errorf("go build ./cmd/app: %v\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ci is true under CI=true: a missing redis-server or nginx fails a test
// instead of skipping it, and Auto must not fall back.
var ci = os.Getenv("CI") == "true"

func needApp(t *testing.T) {
	t.Helper()
	if appBuildErr != nil {
		t.Fatal(appBuildErr)
	}
}

func needBinary(t *testing.T, name string) {
	t.Helper()
	redistest.NeedServer(t, name)
}

// syncBuffer collects progress lines written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// get does GET url and returns the status, X-Instance and body.
func get(t *testing.T, method, url string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Instance"), body
}

func TestStack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		redis, lb   stack.Mode
		wantSummary []string
		wantPids    int
		inProcess   bool // this process serves part of the stack
	}{
		// Redis, 5 masters, nginx, 3 instances; embedded: the instances only.
		{"real", stack.Real, stack.Real, []string{"redis: redis-server", "masters: 5 x redis-server", "lb: nginx"}, 10, false},
		{"embedded", stack.Embedded, stack.Embedded, []string{"redis: embedded miniredis", "masters: 5 x embedded miniredis", "built-in Go reverse proxy"}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needApp(t)
			if tc.redis == stack.Real {
				needBinary(t, "redis-server")
			}
			if tc.lb == stack.Real {
				needBinary(t, "nginx")
			}
			// The races' stand-in says which load balancer it was given
			// and how it was reached.
			races := func(lb string, _ *stack.Stack) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("X-Instance", "races")
					fmt.Fprintf(w, "%s %s via %s", r.Method, r.URL.RequestURI(), lb)
				})
			}
			s, err := stack.Start(context.Background(), stack.Config{
				LBAddr:      "127.0.0.1:0",
				RedisAddr:   "127.0.0.1:0",
				Redis:       tc.redis,
				LB:          tc.lb,
				RequireReal: ci,
				AppBinary:   appBin,
				NginxConf:   "../nginx.conf",
				Log:         redistest.Log(t),
				Races:       races,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop() })

			summary := strings.Join(s.Summary(), "\n")
			for _, w := range tc.wantSummary {
				if !strings.Contains(summary, w) {
					t.Errorf("Summary() lacks %q:\n%s", w, summary)
				}
			}
			if got := len(s.Pids()); got != tc.wantPids {
				t.Errorf("len(Pids()) = %d, want %d: %v", got, tc.wantPids, s.Pids())
			}
			if got := s.InProcess(); got != tc.inProcess {
				t.Errorf("InProcess() = %v, want %v", got, tc.inProcess)
			}
			if got := len(s.InstanceURLs()); got != stack.DefaultInstances {
				t.Errorf("%d instance URLs, want %d", got, stack.DefaultInstances)
			}

			// Every instance answers through the load balancer.
			seen := map[string]int{}
			for range 30 {
				code, inst, body := get(t, http.MethodGet, s.URL()+"/healthz")
				if code != http.StatusOK {
					t.Fatalf("GET /healthz via LB: %d %s", code, body)
				}
				seen[inst]++
			}
			for i := 1; i <= stack.DefaultInstances; i++ {
				if seen["app"+strconv.Itoa(i)] == 0 {
					t.Errorf("app%d never answered through the LB: %v", i, seen)
				}
			}

			// /race and /explore, and only they, go to the stack's race server, at
			// the load balancer's address.
			code, inst, body := get(t, http.MethodPost, s.URL()+"/race?lock=lua")
			if want := "POST /race?lock=lua via " + s.URL(); code != http.StatusOK || inst != "races" || string(body) != want {
				t.Errorf("POST /race via the LB: %d %q %q, want 200 from the races, %q", code, inst, body, want)
			}
			code, inst, body = get(t, http.MethodPost, s.URL()+"/explore?lock=lua")
			if want := "POST /explore?lock=lua via " + s.URL(); code != http.StatusOK || inst != "races" || string(body) != want {
				t.Errorf("POST /explore via the LB: %d %q %q, want 200 from the races, %q", code, inst, body, want)
			}
			if code, inst, _ := get(t, http.MethodGet, s.URL()+"/racetrack"); inst == "races" {
				t.Errorf("GET /racetrack went to the races (%d)", code)
			}

			// They share the stack's Redis: sales through the LB add up.
			if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=10"); code != http.StatusOK {
				t.Fatalf("POST /reset: %d %s", code, body)
			}
			for range 6 {
				if code, _, body := get(t, http.MethodPost, s.URL()+"/sale?lock=lua"); code != http.StatusOK {
					t.Fatalf("POST /sale: %d %s", code, body)
				}
			}
			var stock struct{ Stock, Sold int }
			_, _, body = get(t, http.MethodGet, s.InstanceURLs()[0]+"/stock")
			if err := json.Unmarshal(body, &stock); err != nil || stock.Stock != 4 || stock.Sold != 6 {
				t.Errorf("GET /stock = %s (%v), want stock 4 sold 6", body, err)
			}

			pids := s.Pids()
			start := time.Now()
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Stop took %v", time.Since(start).Round(time.Millisecond))
			if err := s.Stop(); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			redistest.Dead(t, pids)
			if _, err := http.Get(s.URL() + "/healthz"); err == nil {
				t.Error("the LB still answers after Stop")
			}
		})
	}
}

// A start that fails halfway leaves no process behind: here the app never
// gets healthy, after Redis, the masters and all three instances were
// started.
func TestStartFailureStopsEverything(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake-app")
	pidFile := filepath.Join(dir, "fake-pids")
	script := "#!/bin/sh\necho $$ >> " + pidFile + "\nexec sleep 60\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The start fails when the test cancels it, once all three fake
	// instances run (their pids are in the file), not at a time: a
	// timeout short enough to keep the test quick ran out, on a loaded
	// machine, before Redis and the masters were up, and the instances
	// were never started.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	go func() {
		defer close(started)
		for ctx.Err() == nil {
			if b, _ := os.ReadFile(pidFile); len(strings.Fields(string(b))) == stack.DefaultInstances {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err := stack.Start(ctx, stack.Config{
		Dir:       filepath.Join(dir, "run"),
		LBAddr:    "127.0.0.1:0",
		RedisAddr: "127.0.0.1:0",
		Redis:     stack.Auto,
		LB:        stack.Embedded,
		AppBinary: fake,
		Log:       redistest.Log(t),
	})
	cancel()
	<-started
	if err == nil {
		t.Fatal("Start succeeded with an app that never serves")
	}
	t.Logf("Start failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	b, _ := os.ReadFile(pidFile)
	fields := strings.Fields(string(b))
	if len(fields) != stack.DefaultInstances {
		t.Fatalf("fake app started %d times, want %d", len(fields), stack.DefaultInstances)
	}
	var pids []int
	for _, f := range fields {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	redistest.Dead(t, pids)
	// Nothing else (redis-server) still runs with the run dir as its dir.
	run := filepath.Join(dir, "run")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if cwd, err := os.Readlink(p + "/cwd"); err == nil && cwd == run {
			cmdline, _ := os.ReadFile(p + "/cmdline")
			t.Errorf("%s still runs in the run dir: %q", p, cmdline)
		}
	}
}

// Auto with nothing on PATH falls back, and says so; with RequireReal it
// is an error instead.
func TestAutoFallback(t *testing.T) {
	needApp(t)
	t.Setenv("PATH", t.TempDir())
	cfg := stack.Config{
		LBAddr:      "127.0.0.1:0",
		RedisAddr:   "127.0.0.1:0",
		AppBinary:   appBin,
		RequireReal: true,
	}
	if s, err := stack.Start(context.Background(), cfg); err == nil {
		s.Stop()
		t.Fatal("RequireReal: Start fell back instead of failing")
	} else if !strings.Contains(err.Error(), "redis-server not found on PATH") {
		t.Errorf("RequireReal error = %v", err)
	}

	log := &syncBuffer{}
	cfg.RequireReal, cfg.Log = false, log
	s, err := stack.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	for _, want := range []string{
		"redis-server not found on PATH: using embedded miniredis (Redis-compatible, in this process)",
		"nginx not found on PATH: using the built-in Go reverse proxy",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if len(s.Pids()) != stack.DefaultInstances {
		t.Errorf("Pids() = %v, want only the app instances", s.Pids())
	}
}

// A fixed port already in use is refused before anything starts: otherwise
// whatever holds it could answer the health checks.
func TestBusyPortRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = stack.Start(context.Background(), stack.Config{
		LBAddr:    ln.Addr().String(),
		RedisAddr: "127.0.0.1:0",
		Redis:     stack.Embedded,
		LB:        stack.Embedded,
		AppBinary: "/bin/true",
	})
	if err == nil || !strings.Contains(err.Error(), "is not free") {
		t.Fatalf("Start on a busy LB port: %v", err)
	}
}

// startStack starts a stack on free ports with Redis and the load
// balancer in mode, changed by edit, stopped when the test ends. A Real
// part (redis-server, nginx) that is not installed skips the test, or
// fails it under CI=true. Its
// progress lines go to the test log and to the returned buffer.
func startStack(t *testing.T, mode stack.Mode, edit func(*stack.Config)) (*stack.Stack, *syncBuffer) {
	t.Helper()
	needApp(t)
	log := &syncBuffer{}
	cfg := stack.Config{
		LBAddr:      "127.0.0.1:0",
		RedisAddr:   "127.0.0.1:0",
		Redis:       mode,
		LB:          mode,
		RequireReal: ci,
		AppBinary:   appBin,
		NginxConf:   "../nginx.conf",
		Log:         io.MultiWriter(log, redistest.Log(t)),
	}
	if edit != nil {
		edit(&cfg)
	}
	if cfg.Redis == stack.Real {
		needBinary(t, "redis-server")
	}
	if cfg.LB == stack.Real {
		needBinary(t, "nginx")
	}
	s, err := stack.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return s, log
}

// waitUntil polls cond every 20ms until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// healthz is the status of GET base/healthz, 0 when unanswered.
func healthz(base string) int {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

type stockCounters struct{ Stock, Sold, Num int }

func readStock(t *testing.T, base string) stockCounters {
	t.Helper()
	code, _, body := get(t, http.MethodGet, base+"/stock")
	var st stockCounters
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
		t.Fatalf("GET /stock: %d %s (%v)", code, body, err)
	}
	return st
}

// A kept run dir holds the last stack's Redis logs, not every earlier
// one's: they are named by port, and each stack picks its ports anew.
func TestKeptDirHoldsTheLastRedisLogs(t *testing.T) {
	needApp(t)
	needBinary(t, "redis-server")
	dir := t.TempDir()
	for range 2 {
		s, err := stack.Start(context.Background(), stack.Config{
			Dir: dir, LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
			Redis: stack.Real, LB: stack.Embedded, Instances: 1, AppBinary: appBin,
			RequireReal: ci, Log: redistest.Log(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "redis-*.log"))
	// Redis and its 5 masters, the second stack's.
	if len(logs) != 6 {
		t.Errorf("after two stacks the run dir holds %d Redis logs, want the last stack's 6: %v", len(logs), logs)
	}
}
