package stack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/stack"
)

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
		Log:         io.MultiWriter(log, testLog{t}),
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

// StopRedis and StartRedis take the main Redis away mid-run and bring it
// back on the same address with its data; the instances, which reach it
// through the fault proxy here, serve again.
func TestStopStartRedis(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			s, log := startStack(t, mode, func(c *stack.Config) {
				c.LB = stack.Embedded
				c.Masters = -1
				c.RedisProxy = true
			})
			ctx := context.Background()
			if p := s.RedisProxy(); p == nil || p.Upstream() != s.RedisAddr() {
				t.Fatalf("RedisProxy() = %v, want a proxy to %s", p, s.RedisAddr())
			}
			for i, pid := range s.InstancePids() {
				if got := flagValues(procStrings(t, pid, "cmdline"), "-redis"); !slices.Equal(got, []string{s.RedisProxy().Addr()}) {
					t.Errorf("instance %d: -redis %q, want the proxy %s", i, got, s.RedisProxy().Addr())
				}
			}
			if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=7"); code != http.StatusOK {
				t.Fatalf("POST /reset: %d %s", code, body)
			}
			if code, _, body := get(t, http.MethodPost, s.URL()+"/sale?lock=lua"); code != http.StatusOK {
				t.Fatalf("POST /sale: %d %s", code, body)
			}
			rdb := redis.NewClient(&redis.Options{Addr: s.RedisAddr(), MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
			defer rdb.Close()
			if err := rdb.Set(ctx, "kept", "across a restart", 0).Err(); err != nil {
				t.Fatal(err)
			}
			oldPid := 0
			if mode == stack.Real {
				oldPid = s.Pids()[0]
			}
			nPids := len(s.Pids())

			if err := s.StopRedis(ctx); err != nil {
				t.Fatal(err)
			}
			refused(t, s.RedisAddr())
			if mode == stack.Real {
				dead(t, []int{oldPid})
				if slices.Contains(s.Pids(), oldPid) || len(s.Pids()) != nPids-1 {
					t.Errorf("Pids() = %v with Redis (pid %d) stopped", s.Pids(), oldPid)
				}
			}
			if code := healthz(s.InstanceURLs()[0]); code != http.StatusServiceUnavailable {
				t.Errorf("app1 /healthz with Redis stopped: %d, want 503", code)
			}
			if summary := strings.Join(s.Summary(), "\n"); !strings.Contains(summary, "stopped") {
				t.Errorf("Summary() does not say Redis is stopped:\n%s", summary)
			}
			if err := s.StopRedis(ctx); err != nil {
				t.Errorf("second StopRedis: %v", err)
			}

			if err := s.StartRedis(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.StartRedis(ctx); err != nil {
				t.Errorf("second StartRedis: %v", err)
			}
			if got, err := rdb.Get(ctx, "kept").Result(); err != nil || got != "across a restart" {
				t.Errorf("GET kept after the restart = %q, %v", got, err)
			}
			if mode == stack.Real {
				newPid := s.Pids()[0]
				if newPid == oldPid || len(s.Pids()) != nPids {
					t.Errorf("Pids() = %v after StartRedis (old Redis pid %d)", s.Pids(), oldPid)
				}
				if got := procStrings(t, newPid, "cmdline"); !strings.Contains(strings.Join(got, " "), "redis-server") {
					t.Errorf("pid %d is not a redis-server: %q", newPid, got)
				}
			}
			for i, u := range s.InstanceURLs() {
				waitUntil(t, 5*time.Second, fmt.Sprintf("instance %d /healthz is not 200 again", i), func() bool { return healthz(u) == http.StatusOK })
			}
			if st := readStock(t, s.URL()); st.Stock != 6 || st.Sold != 1 {
				t.Errorf("GET /stock after the restart = %+v, want stock 6 sold 1", st)
			}
			if code, _, body := get(t, http.MethodPost, s.URL()+"/sale?lock=lua"); code != http.StatusOK {
				t.Errorf("POST /sale after the restart: %d %s", code, body)
			}
			stopped := "stopped (its data kept in this process)"
			if mode == stack.Real {
				stopped = fmt.Sprintf("redis: pid %d on %s stopped by SHUTDOWN SAVE", oldPid, s.RedisAddr())
			}
			for _, w := range []string{stopped, "started again on " + s.RedisAddr()} {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %q", w)
				}
			}

			pids := s.Pids()
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			dead(t, pids)
			if err := s.StartRedis(ctx); err == nil {
				t.Error("StartRedis after Stop succeeded")
			}
		})
	}
}

// Signal reaches the instance's current process; after SIGKILL the
// supervisor restarts it as after any crash.
func TestSignalKill(t *testing.T) {
	s, log := startStack(t, stack.Embedded, func(c *stack.Config) { c.Masters = -1 })
	if s.Instances() != stack.DefaultInstances {
		t.Errorf("Instances() = %d", s.Instances())
	}
	victim := s.InstancePids()[2]
	pid, err := s.Signal(2, syscall.SIGKILL)
	if err != nil || pid != victim {
		t.Fatalf("Signal(2, SIGKILL) = %d, %v; want pid %d", pid, err, victim)
	}
	waitUntil(t, 10*time.Second, "app3 not restarted and healthy", func() bool {
		return s.Restarts() == 1 && strings.Contains(log.String(), "app3: healthy again")
	})
	if now := s.InstancePids()[2]; now == victim {
		t.Errorf("InstancePids()[2] still %d", now)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("app3: pid %d exited unexpectedly", victim)) {
		t.Errorf("log does not report the kill as a crash:\n%s", log)
	}
	dead(t, []int{victim})
	for _, i := range []int{-1, stack.DefaultInstances} {
		if _, err := s.Signal(i, syscall.SIGTERM); err == nil {
			t.Errorf("Signal(%d) succeeded", i)
		}
	}
}

// loadResult counts what a load run got back.
type loadResult struct {
	mu     sync.Mutex
	codes  map[int]int
	errs   []error
	byApp  map[string][]time.Time // when each instance answered
	fiveXX []string
	done   chan struct{} // closed when every goroutine has returned
}

// load sends POST path to base from n goroutines until stop closes, each on
// a keep-alive client as a real load would.
func load(base, path string, n int, stop <-chan struct{}) *loadResult {
	res := &loadResult{codes: map[int]int{}, byApp: map[string][]time.Time{}, done: make(chan struct{})}
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: n, Proxy: nil},
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(base+path, "", nil)
				now := time.Now()
				res.mu.Lock()
				if err != nil {
					res.errs = append(res.errs, err)
				} else {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					res.codes[resp.StatusCode]++
					inst := resp.Header.Get("X-Instance")
					res.byApp[inst] = append(res.byApp[inst], now)
					if resp.StatusCode >= 500 {
						res.fiveXX = append(res.fiveXX, fmt.Sprintf("%d from %q at %s: %s", resp.StatusCode, inst, now.Format("15:04:05.000"), body))
					}
				}
				res.mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		client.CloseIdleConnections()
		close(res.done)
	}()
	return res
}

// Drain takes an instance out under load with no request failing: out of
// the load balancer, SIGTERM, restart, back in.
func TestDrain(t *testing.T) {
	for _, mode := range []stack.Mode{stack.Real, stack.Embedded} {
		t.Run(string(mode), func(t *testing.T) {
			s, log := startStack(t, mode, func(c *stack.Config) { c.Masters = -1 })
			ctx := context.Background()
			if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=100000"); code != http.StatusOK {
				t.Fatalf("POST /reset: %d %s", code, body)
			}
			before := s.InstancePids()

			stop := make(chan struct{})
			res := load(s.URL(), "/sale?lock=lua", 8, stop)
			time.Sleep(300 * time.Millisecond)
			rep, err := s.Drain(ctx, 1)
			time.Sleep(300 * time.Millisecond)
			close(stop)
			<-res.done
			if err != nil {
				t.Fatalf("Drain: %v\n%s", err, log)
			}
			t.Logf("drain: %+v; answers %v, transport errors %d", rep, res.codes, len(res.errs))

			if len(res.fiveXX) > 0 {
				t.Errorf("%d answers 5xx during the drain, e.g. %s", len(res.fiveXX), res.fiveXX[0])
			}
			// nginx's reloads (out, then back in) have its old workers
			// close their idle keep-alive connections to clients; a POST
			// the client had just sent on one is lost unread, and Go's
			// client does not resend a POST. Those are the only failures
			// allowed, with nginx only, and none of them may have sold
			// (checked against the counters below).
			for i, err := range res.errs {
				if mode != stack.Real || !closedKeepAlive(err) {
					t.Errorf("request failed without an answer during the drain: %v", err)
				} else if i < 3 {
					t.Logf("keep-alive connection closed by nginx's reload: %v", err)
				}
			}
			if res.codes[http.StatusOK] == 0 {
				t.Fatalf("no sale went through: %v", res.codes)
			}
			if rep.Instance != 1 || rep.Name != "app2" || rep.Pid != before[1] {
				t.Errorf("report %+v, want app2 pid %d", rep, before[1])
			}
			if now := s.InstancePids(); rep.NewPid == 0 || rep.NewPid == before[1] || now[1] != rep.NewPid || now[0] != before[0] || now[2] != before[2] {
				t.Errorf("InstancePids() %v -> %v, report new pid %d", before, now, rep.NewPid)
			}
			if rep.Drain <= 0 || rep.Drain > 10*time.Second || rep.Back.IsZero() {
				t.Errorf("report %+v: drain time or back time missing", rep)
			}
			dead(t, []int{before[1]})
			// Back in the load balancer: app2 answered after it was.
			var after int
			for _, at := range res.byApp["app2"] {
				if at.After(rep.Back) {
					after++
				}
			}
			if after == 0 {
				t.Errorf("app2 never answered through the load balancer after it was back at %s", rep.Back.Format("15:04:05.000"))
			}
			if s.Restarts() != 0 {
				t.Errorf("Restarts() = %d: the drain was counted as a crash", s.Restarts())
			}
			if l := log.String(); !strings.Contains(l, fmt.Sprintf("app2: pid %d drained", before[1])) || strings.Contains(l, "unexpectedly") {
				t.Errorf("log does not say drained, or says crashed:\n%s", l)
			}
			// Every sale answered 200 was one, and only those: nothing
			// doubled by the drain, and no request that failed sold.
			if st := readStock(t, s.URL()); st.Sold != res.codes[http.StatusOK] || st.Stock != 100000-st.Sold {
				t.Errorf("GET /stock = %+v after %d sales answered 200", st, res.codes[http.StatusOK])
			}
			if _, err := s.Drain(ctx, 3); err == nil {
				t.Error("Drain(3) of 3 instances succeeded")
			}
		})
	}
}

// closedKeepAlive reports whether err is a request lost to its keep-alive
// connection being closed under it.
func closedKeepAlive(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// Drain never takes the last instance out of the load balancer.
func TestDrainRefusesLastInstance(t *testing.T) {
	s, _ := startStack(t, stack.Embedded, func(c *stack.Config) { c.Masters = -1; c.Instances = 1 })
	pid := s.InstancePids()[0]
	if _, err := s.Drain(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "last instance") {
		t.Errorf("Drain of the only instance: %v", err)
	}
	if s.InstancePids()[0] != pid || healthz(s.URL()) != http.StatusOK {
		t.Errorf("the refused drain touched the instance: pid %d -> %d", pid, s.InstancePids()[0])
	}
}

// With MasterProxies each master is reached through its own proxy: a cut
// there makes that master time out while it still runs; redlock goes on
// with the other four.
func TestMasterProxies(t *testing.T) {
	// Real redis-server masters when installed (required under CI=true).
	s, _ := startStack(t, stack.Embedded, func(c *stack.Config) {
		c.Redis = stack.Auto
		c.MasterProxies = true
		// The flag parses, and an instance runs with it.
		c.InstanceArgs = map[int][]string{0: {"-redis-retries", "3"}}
	})
	ctx := context.Background()
	addrs := s.MasterAddrs()
	if len(addrs) != stack.DefaultMasters {
		t.Fatalf("MasterAddrs() = %v", addrs)
	}
	var via []string
	for i, a := range addrs {
		p := s.MasterProxy(i)
		if p == nil || p.Upstream() != a || p.Addr() == a {
			t.Fatalf("MasterProxy(%d) = %v, want a proxy to %s", i, p, a)
		}
		via = append(via, p.Addr())
	}
	if s.MasterProxy(-1) != nil || s.MasterProxy(len(addrs)) != nil || s.RedisProxy() != nil {
		t.Error("a proxy where none was asked for")
	}
	for i, pid := range s.InstancePids() {
		if got, want := flagValues(procStrings(t, pid, "cmdline"), "-masters"), strings.Join(via, ","); !slices.Equal(got, []string{want}) {
			t.Errorf("instance %d: -masters %q, want the proxies %q", i, got, want)
		}
		if v, _ := envValue(procStrings(t, pid, "environ"), stack.MastersEnv); v != strings.Join(via, ",") {
			t.Errorf("instance %d: %s=%q, want the proxies", i, stack.MastersEnv, v)
		}
	}
	if got := flagValues(procStrings(t, s.InstancePids()[0], "cmdline"), "-redis-retries"); !slices.Equal(got, []string{"3"}) {
		t.Errorf("app1 -redis-retries %q", got)
	}
	if !strings.Contains(strings.Join(s.Summary(), "\n"), "masters via") {
		t.Errorf("Summary() does not name the proxies:\n%s", strings.Join(s.Summary(), "\n"))
	}

	through := redis.NewClient(&redis.Options{Addr: via[0], ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
	defer through.Close()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.MasterProxy(0).Cut()
	start := time.Now()
	err := through.Ping(ctx).Err()
	if !isTimeout(err) {
		t.Errorf("PING master 0 through its cut proxy: %v, want a timeout", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("the timeout came after %v, not the read timeout", took)
	}
	if err := pingAddr(ctx, addrs[0]); err != nil {
		t.Errorf("master 0 itself: %v, want it running", err)
	}
	// Four of five masters answer: redlock still takes its lock, each try
	// bounded by its node timeout.
	if code, _, body := get(t, http.MethodPost, s.URL()+"/testLock?lock=redlock"); code != http.StatusOK {
		t.Errorf("POST /testLock?lock=redlock with master 0 cut: %d %s", code, body)
	}
	s.MasterProxy(0).Heal()
	if err := through.Ping(ctx).Err(); err != nil {
		t.Errorf("PING master 0 after Heal: %v", err)
	}
}
