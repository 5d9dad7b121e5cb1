package stack_test

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack"
)

// flagValues returns every value given to flag name in args ("-name v").
func flagValues(args []string, name string) []string {
	var vs []string
	for i, a := range args {
		if a == name && i+1 < len(args) {
			vs = append(vs, args[i+1])
		}
	}
	return vs
}

// envValue returns the value of key in a KEY=VALUE list.
func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v, true
		}
	}
	return "", false
}

func pingAddr(ctx context.Context, addr, password string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}

// A stack starts five Redlock masters, real or embedded as its Redis, and
// hands their addresses to every instance; one can be stopped (its address
// refuses connections, the others answer) and brought back empty.
func TestMasters(t *testing.T) {
	for _, tc := range []struct {
		mode        stack.Mode
		wantSummary string
		wantPids    int // Redis, masters, instances (built-in proxy)
	}{
		{stack.Real, "masters: 5 x redis-server ", 1 + stack.DefaultMasters + stack.DefaultInstances},
		{stack.Embedded, "masters: 5 x embedded miniredis ", stack.DefaultInstances},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			needApp(t)
			if tc.mode == stack.Real {
				needBinary(t, "redis-server")
			}
			ctx := context.Background()
			log := &syncBuffer{}
			s, err := stack.Start(ctx, stack.Config{
				LBAddr:      "127.0.0.1:0",
				RedisAddr:   "127.0.0.1:0",
				Redis:       tc.mode,
				LB:          stack.Embedded,
				RequireReal: ci,
				AppBinary:   appBin,
				Log:         io.MultiWriter(log, redistest.Log(t)),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Stop() })

			addrs := s.MasterAddrs()
			if len(addrs) != stack.DefaultMasters {
				t.Fatalf("MasterAddrs() = %v, want %d", addrs, stack.DefaultMasters)
			}
			if all := append(slices.Clone(addrs), s.RedisAddr()); len(slices.Compact(slices.Sorted(slices.Values(all)))) != len(all) {
				t.Fatalf("masters and Redis share an address: %v", all)
			}
			for _, a := range addrs {
				if err := pingAddr(ctx, a, s.RedisPassword()); err != nil {
					t.Errorf("PING master %s: %v", a, err)
				}
			}
			joined := strings.Join(addrs, ",")
			summary := strings.Join(s.Summary(), "\n")
			if !strings.Contains(summary, tc.wantSummary) || !strings.Contains(summary, joined) {
				t.Errorf("Summary() lacks %q on %s:\n%s", tc.wantSummary, joined, summary)
			}
			if got := len(s.Pids()); got != tc.wantPids {
				t.Errorf("len(Pids()) = %d, want %d: %v", got, tc.wantPids, s.Pids())
			}

			// Every instance got the masters, in order, as its flag and in
			// its environment.
			for i, pid := range s.InstancePids() {
				if got, want := flagValues(redistest.ProcStrings(t, pid, "cmdline"), "-masters"), []string{joined}; !slices.Equal(got, want) {
					t.Errorf("instance %d (pid %d): -masters %q, want %q", i, pid, got, want)
				}
				if v, _ := envValue(redistest.ProcStrings(t, pid, "environ"), stack.MastersEnv); v != joined {
					t.Errorf("instance %d (pid %d): %s=%q, want %q", i, pid, stack.MastersEnv, v, joined)
				}
				// The cores shared among the instances, unless we chose.
				want, set := os.LookupEnv("GOMAXPROCS")
				if !set {
					want = strconv.Itoa(max(1, runtime.NumCPU()/len(s.InstancePids())))
				}
				if v, _ := envValue(redistest.ProcStrings(t, pid, "environ"), "GOMAXPROCS"); v != want {
					t.Errorf("instance %d (pid %d): GOMAXPROCS=%q, want %q", i, pid, v, want)
				}
				// The runtime's monitor kept awake, unless we chose.
				wantDebug, _ := stack.WithAwakeMonitor(os.Getenv("GODEBUG"))
				if v, _ := envValue(redistest.ProcStrings(t, pid, "environ"), "GODEBUG"); v != wantDebug {
					t.Errorf("instance %d (pid %d): GODEBUG=%q, want %q", i, pid, v, wantDebug)
				}
			}

			// Master 1 down: refused there, the others answer; a client
			// connected to it sees errors.
			rdb := redis.NewClient(&redis.Options{Addr: addrs[1], Password: s.RedisPassword(), MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			before := s.Pids()
			if err := s.StopMaster(1); err != nil {
				t.Fatal(err)
			}
			redistest.Refused(t, addrs[1])
			if err := rdb.Get(ctx, "k").Err(); err == nil || errors.Is(err, redis.Nil) {
				t.Errorf("GET on a stopped master: %v, want a connection error", err)
			}
			for i, a := range addrs {
				if i != 1 {
					if err := pingAddr(ctx, a, s.RedisPassword()); err != nil {
						t.Errorf("PING master %d (%s) while master 1 is down: %v", i, a, err)
					}
				}
			}
			if err := s.StopMaster(1); err != nil {
				t.Errorf("second StopMaster(1): %v", err)
			}
			after := s.Pids()
			if tc.mode == stack.Real {
				if len(after) != len(before)-1 {
					t.Errorf("Pids() %v -> %v, want one fewer", before, after)
				}
				var gone []int
				for _, p := range before {
					if !slices.Contains(after, p) {
						gone = append(gone, p)
					}
				}
				redistest.Dead(t, gone)
			}
			if summary := strings.Join(s.Summary(), "\n"); !strings.Contains(summary, "stopped: "+addrs[1]) {
				t.Errorf("Summary() does not say master 1 is stopped:\n%s", summary)
			}

			// Back on the same address, empty.
			if err := s.StartMaster(1); err != nil {
				t.Fatal(err)
			}
			if err := s.StartMaster(1); err != nil {
				t.Errorf("second StartMaster(1): %v", err)
			}
			if got, err := rdb.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
				t.Errorf("GET k on the restarted master = %q, %v; want redis.Nil (empty)", got, err)
			}
			if got := len(s.Pids()); got != tc.wantPids {
				t.Errorf("after StartMaster, len(Pids()) = %d, want %d", got, tc.wantPids)
			}
			if !slices.Equal(s.MasterAddrs(), addrs) {
				t.Errorf("MasterAddrs() = %v after a restart, want %v", s.MasterAddrs(), addrs)
			}
			for _, i := range []int{-1, stack.DefaultMasters} {
				if err := s.StopMaster(i); err == nil {
					t.Errorf("StopMaster(%d) succeeded", i)
				}
				if err := s.StartMaster(i); err == nil {
					t.Errorf("StartMaster(%d) succeeded", i)
				}
			}
			for _, w := range []string{"masters: 1 on " + addrs[1] + " stopped", "masters: 1 on " + addrs[1] + " started again"} {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %q", w)
				}
			}

			pids := append(before, s.Pids()...)
			if err := s.Stop(); err != nil {
				t.Fatal(err)
			}
			redistest.Dead(t, pids)
			for _, a := range addrs {
				redistest.Refused(t, a)
			}
			if err := s.StartMaster(0); err == nil {
				t.Error("StartMaster after Stop succeeded")
			}
		})
	}
}

// InstanceArgs reach only their instance, after AppArgs, and again after
// the supervisor restarts it; with no masters, no instance hears of any.
func TestInstanceArgs(t *testing.T) {
	needApp(t)
	cfg := stack.Config{
		LBAddr:       "127.0.0.1:0",
		RedisAddr:    "127.0.0.1:0",
		Redis:        stack.Embedded,
		LB:           stack.Embedded,
		AppBinary:    appBin,
		AppArgs:      []string{"-lock-wait", "3s"},
		InstanceArgs: map[int][]string{stack.DefaultInstances: {"-clock-skew", "2s"}},
		Masters:      -1,
	}
	if s, err := stack.Start(context.Background(), cfg); err == nil {
		s.Stop()
		t.Fatal("Start with InstanceArgs for a fourth of three instances succeeded")
	} else if !strings.Contains(err.Error(), "InstanceArgs") {
		t.Errorf("InstanceArgs out of range: %v", err)
	}

	// A value in the caller's environment never reaches a stack without
	// masters.
	t.Setenv(stack.MastersEnv, "127.0.0.1:1")
	log := &syncBuffer{}
	cfg.InstanceArgs = map[int][]string{1: {"-clock-skew", "2s"}}
	cfg.Log = log
	s, err := stack.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	if len(s.MasterAddrs()) != 0 {
		t.Errorf("Masters -1: MasterAddrs() = %v", s.MasterAddrs())
	}
	if summary := strings.Join(s.Summary(), "\n"); strings.Contains(summary, "masters") {
		t.Errorf("Masters -1: Summary() mentions masters:\n%s", summary)
	}
	if err := s.StopMaster(0); err == nil {
		t.Error("StopMaster(0) without masters succeeded")
	}

	check := func(when string) {
		t.Helper()
		for i, pid := range s.InstancePids() {
			args := redistest.ProcStrings(t, pid, "cmdline")
			want := []string{"-lock-wait", "3s"}
			if i == 1 {
				want = append(want, "-clock-skew", "2s")
			}
			if tail := args[max(0, len(args)-len(want)):]; !slices.Equal(tail, want) {
				t.Errorf("%s: instance %d (pid %d) args %q, want them to end with %q", when, i, pid, args, want)
			}
			if i != 1 && slices.Contains(args, "-clock-skew") {
				t.Errorf("%s: instance %d got instance 1's args: %q", when, i, args)
			}
			if slices.Contains(args, "-masters") {
				t.Errorf("%s: instance %d got -masters with no masters: %q", when, i, args)
			}
			if v, ok := envValue(redistest.ProcStrings(t, pid, "environ"), stack.MastersEnv); ok {
				t.Errorf("%s: instance %d has %s=%q with no masters", when, i, stack.MastersEnv, v)
			}
		}
	}
	check("at start")

	before := s.InstancePids()
	if err := syscall.Kill(before[1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(log.String(), "app2: healthy again") {
		if time.Now().After(deadline) {
			t.Fatalf("app2 not restarted: pids %v -> %v\n%s", before, s.InstancePids(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	after := s.InstancePids()
	if after[1] == before[1] || after[0] != before[0] || after[2] != before[2] {
		t.Fatalf("InstancePids() %v -> %v: want only instance 1 new", before, after)
	}
	check("after a restart")
}

// A crashed master (SIGKILL) comes back on its address with what it
// persisted: nothing by default, every acknowledged SET with MastersAOF.
// Miniredis masters cannot persist: MastersAOF then fails the start.
func TestCrashMaster(t *testing.T) {
	for _, aof := range []bool{false, true} {
		t.Run("aof="+strconv.FormatBool(aof), func(t *testing.T) {
			s, log := startStack(t, stack.Embedded, func(c *stack.Config) {
				c.Redis, c.MastersAOF = stack.Real, aof
			})
			if summary := strings.Join(s.Summary(), "\n"); !strings.Contains(summary, "masters: 5 x redis-server") {
				t.Fatalf("the masters are not redis-servers:\n%s", summary)
			}
			ctx := context.Background()
			addr := s.MasterAddrs()[2]
			rdb := redis.NewClient(&redis.Options{Addr: addr, Password: s.RedisPassword(), MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond})
			defer rdb.Close()
			if err := rdb.Set(ctx, "lock", "token-a", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			before := s.Pids()
			if err := s.CrashMaster(2); err != nil {
				t.Fatal(err)
			}
			redistest.Refused(t, addr)
			if err := s.CrashMaster(2); err == nil {
				t.Error("a second CrashMaster(2) succeeded")
			}
			if err := s.RestartMaster(2); err != nil {
				t.Fatal(err)
			}
			if err := s.RestartMaster(2); err != nil {
				t.Errorf("RestartMaster(2) of a running master: %v", err)
			}
			got, err := rdb.Get(ctx, "lock").Result()
			switch {
			case aof && (err != nil || got != "token-a"):
				t.Errorf("with an append-only file: GET lock = %q, %v; want token-a", got, err)
			case !aof && !errors.Is(err, redis.Nil):
				t.Errorf("without persistence: GET lock = %q, %v; want nothing", got, err)
			}
			if aof {
				if ttl, err := rdb.PTTL(ctx, "lock").Result(); err != nil || ttl <= 0 || ttl > 10*time.Second {
					t.Errorf("PTTL lock after the restart = %s, %v: want the lease's rest", ttl, err)
				}
			}
			after := s.Pids()
			if len(after) != len(before) || slices.Equal(after, before) {
				t.Errorf("Pids() %v -> %v: want as many, one new", before, after)
			}
			if !strings.Contains(log.String(), "masters: 2 on "+addr+" crashed (SIGKILL") {
				t.Errorf("log lacks the crash:\n%s", log)
			}
		})
	}
	t.Run("embedded", func(t *testing.T) {
		needApp(t)
		s, err := stack.Start(context.Background(), stack.Config{
			LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0", Redis: stack.Embedded, LB: stack.Embedded,
			AppBinary: appBin, MastersAOF: true,
		})
		if err == nil {
			s.Stop()
			t.Fatal("miniredis masters with MastersAOF started")
		}
		if !strings.Contains(err.Error(), "need redis-server") {
			t.Errorf("error %q does not say redis-server is needed", err)
		}
	})
}
