package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	if _, err := exec.LookPath(name); err != nil {
		if ci {
			t.Fatalf("%s not on PATH and CI=true: install it (%v)", name, err)
		}
		t.Skipf("%s not on PATH: skipping the real-%s case (it fails under CI=true)", name, name)
	}
}

// testLog sends progress lines to t.Log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
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

// dead fails the test if pid, or any process in the group it led, runs.
func dead(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
}

func TestStartRedis(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == stack.Real {
				needBinary(t, "redis-server")
			}
			ctx := context.Background()
			r, err := stack.StartRedis(ctx, "127.0.0.1:0", mode, ci, testLog{t})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Stop() })
			if got, want := r.Embedded(), mode == stack.Embedded; got != want {
				t.Errorf("Embedded() = %v, want %v", got, want)
			}
			if got := r.Pid(); (got != 0) != (mode == stack.Real) {
				t.Errorf("Pid() = %d in mode %s", got, mode)
			}

			rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 150*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
				t.Fatalf("GET k = %q, %v; want v", got, err)
			}
			// The TTL runs out in real time, embedded too (nobody calls
			// FastForward here).
			time.Sleep(400 * time.Millisecond)
			if got, err := rdb.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET k after its PX 150 = %q, %v; want redis.Nil", got, err)
			}

			pid := r.Pid()
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := r.Stop(); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
			if pid != 0 {
				dead(t, []int{pid})
			}
			pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if err := rdb.Ping(pctx).Err(); err == nil {
				t.Error("PING answered after Stop")
			}
		})
	}
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
	}{
		// Redis, 5 masters, nginx, 3 instances; embedded: the instances only.
		{"real", stack.Real, stack.Real, []string{"redis: redis-server", "masters: 5 x redis-server", "lb: nginx"}, 10},
		{"embedded", stack.Embedded, stack.Embedded, []string{"redis: embedded miniredis", "masters: 5 x embedded miniredis", "built-in Go reverse proxy"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needApp(t)
			if tc.redis == stack.Real {
				needBinary(t, "redis-server")
			}
			if tc.lb == stack.Real {
				needBinary(t, "nginx")
			}
			s, err := stack.Start(context.Background(), stack.Config{
				LBAddr:      "127.0.0.1:0",
				RedisAddr:   "127.0.0.1:0",
				Redis:       tc.redis,
				LB:          tc.lb,
				RequireReal: ci,
				AppBinary:   appBin,
				NginxConf:   "../nginx.conf",
				Log:         testLog{t},
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
			_, _, body := get(t, http.MethodGet, s.InstanceURLs()[0]+"/stock")
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
			dead(t, pids)
			if _, err := http.Get(s.URL() + "/healthz"); err == nil {
				t.Error("the LB still answers after Stop")
			}
		})
	}
}

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
	dead(t, pids)
	t.Logf("supervisor log:\n%s", log)
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
	start := time.Now()
	_, err := stack.Start(context.Background(), stack.Config{
		Dir:          filepath.Join(dir, "run"),
		LBAddr:       "127.0.0.1:0",
		RedisAddr:    "127.0.0.1:0",
		Redis:        stack.Auto,
		LB:           stack.Embedded,
		AppBinary:    fake,
		StartTimeout: time.Second,
		Log:          testLog{t},
	})
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
	dead(t, pids)
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

// TestStartRedisNeverAdoptsAnotherServer: a port already served by another
// redis-server must fail the start, not pass for ours (two tests would then
// share one Redis while ours had exited). Parallel test packages picking
// free ports at once meet exactly this; with port 0 StartRedis picks again.
func TestStartRedisNeverAdoptsAnotherServer(t *testing.T) {
	needBinary(t, "redis-server")
	ctx := context.Background()
	first, err := stack.StartRedis(ctx, "127.0.0.1:0", stack.Real, ci, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Stop() })

	second, err := stack.StartRedis(ctx, first.Addr(), stack.Real, ci, testLog{t})
	if err == nil {
		second.Stop()
		t.Fatalf("a second redis-server on %s reported started (pid %d) while pid %d serves it", first.Addr(), second.Pid(), first.Pid())
	}
	if !strings.Contains(err.Error(), "taken by another process") {
		t.Fatalf("error %v, want the port named as taken", err)
	}
	if pingErr := redis.NewClient(&redis.Options{Addr: first.Addr()}).Ping(ctx).Err(); pingErr != nil {
		t.Fatalf("the first server stopped answering: %v", pingErr)
	}
}
