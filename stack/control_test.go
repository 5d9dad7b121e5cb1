package stack_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

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
				if got := flagValues(redistest.ProcStrings(t, pid, "cmdline"), "-redis"); !slices.Equal(got, []string{s.RedisProxy().Addr()}) {
					t.Errorf("instance %d: -redis %q, want the proxy %s", i, got, s.RedisProxy().Addr())
				}
			}
			if code, _, body := get(t, http.MethodPost, s.URL()+"/reset?stock=7"); code != http.StatusOK {
				t.Fatalf("POST /reset: %d %s", code, body)
			}
			if code, _, body := get(t, http.MethodPost, s.URL()+"/sale?lock=lua"); code != http.StatusOK {
				t.Fatalf("POST /sale: %d %s", code, body)
			}
			rdb := redis.NewClient(&redis.Options{Addr: s.RedisAddr(), Password: s.RedisPassword(), MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
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
			redistest.Refused(t, s.RedisAddr())
			if mode == stack.Real {
				redistest.Dead(t, []int{oldPid})
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
				if got := redistest.ProcStrings(t, newPid, "cmdline"); !strings.Contains(strings.Join(got, " "), "redis-server") {
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
			redistest.Dead(t, pids)
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
	redistest.Dead(t, []int{victim})
	for _, i := range []int{-1, stack.DefaultInstances} {
		if _, err := s.Signal(i, syscall.SIGTERM); err == nil {
			t.Errorf("Signal(%d) succeeded", i)
		}
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
		if got, want := flagValues(redistest.ProcStrings(t, pid, "cmdline"), "-masters"), strings.Join(via, ","); !slices.Equal(got, []string{want}) {
			t.Errorf("instance %d: -masters %q, want the proxies %q", i, got, want)
		}
		if v, _ := envValue(redistest.ProcStrings(t, pid, "environ"), stack.MastersEnv); v != strings.Join(via, ",") {
			t.Errorf("instance %d: %s=%q, want the proxies", i, stack.MastersEnv, v)
		}
	}
	if got := flagValues(redistest.ProcStrings(t, s.InstancePids()[0], "cmdline"), "-redis-retries"); !slices.Equal(got, []string{"3"}) {
		t.Errorf("app1 -redis-retries %q", got)
	}
	if !strings.Contains(strings.Join(s.Summary(), "\n"), "masters via") {
		t.Errorf("Summary() does not name the proxies:\n%s", strings.Join(s.Summary(), "\n"))
	}

	through := redis.NewClient(&redis.Options{Addr: via[0], Password: s.RedisPassword(), ReadTimeout: 300 * time.Millisecond, MaxRetries: -1, DialerRetries: 1})
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
	if err := pingAddr(ctx, addrs[0], s.RedisPassword()); err != nil {
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

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
