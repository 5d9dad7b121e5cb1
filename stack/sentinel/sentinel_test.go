package sentinel_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack/sentinel"
	"github.com/redis/go-redis/v9"
)

func sentinelClient(t *testing.T, addr, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func serverRoleOf(t *testing.T, c *redis.Client) string {
	t.Helper()
	v, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(v) == 0 {
		t.Fatalf("ROLE on %s: %v %v", c.Options().Addr, v, err)
	}
	r, _ := v[0].(string)
	return r
}

func serverInfo(t *testing.T, c *redis.Client, section string) string {
	t.Helper()
	s, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s on %s: %v", section, c.Options().Addr, err)
	}
	return s
}

// A primary, its replica behind the replication link and three real
// sentinels: a write made while the link is cut (for half a second) never
// reaches the replica, the primary is SIGKILLed, the sentinels promote the
// replica anyway, and the write is gone from the new primary. Stop leaves
// no process behind.
func TestSentinelFailover(t *testing.T) {
	redistest.NeedServer(t, "redis-server")
	ctx := context.Background()
	g, err := sentinel.Start(ctx, sentinel.Config{Log: redistest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })

	if g.MasterName() != sentinel.DefaultMasterName {
		t.Errorf("MasterName() = %q", g.MasterName())
	}
	sentinels := g.SentinelAddrs()
	if len(sentinels) != sentinel.Sentinels {
		t.Fatalf("SentinelAddrs() = %v", sentinels)
	}
	old, err := g.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	link := g.ReplicationLink()
	all := append(slices.Clone(sentinels), old, g.ReplicaAddr(), link.Addr())
	if len(slices.Compact(slices.Sorted(slices.Values(all)))) != len(all) {
		t.Fatalf("two parts share an address: %v", all)
	}
	if link.Upstream() != old {
		t.Errorf("link forwards to %s, want the primary %s", link.Upstream(), old)
	}

	// Five real processes: the two servers and three sentinel processes.
	pids := g.Pids()
	if len(pids) != 2+sentinel.Sentinels {
		t.Fatalf("Pids() = %v, want %d", pids, 2+sentinel.Sentinels)
	}
	for _, pid := range pids[2:] {
		cmd := strings.Join(redistest.ProcStrings(t, pid, "cmdline"), " ")
		if !strings.Contains(cmd, "sentinel") {
			t.Errorf("pid %d is not a sentinel: %q", pid, cmd)
		}
	}

	// Nothing of the group answers a client without its password.
	if g.Password() == "" {
		t.Fatal("the group has no password")
	}
	for i, a := range append(slices.Clone(sentinels), old, g.ReplicaAddr()) {
		c := sentinelClient(t, a, "")
		if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("%s answered PING without the password: %v (want NOAUTH)", a, err)
		}
		ask := c.Get(ctx, "before").Err() // a server's data
		if i < len(sentinels) {
			ask = c.Do(ctx, "SENTINEL", "get-master-addr-by-name", g.MasterName()).Err() // a sentinel's
		}
		if ask == nil || !strings.Contains(ask.Error(), "NOAUTH") {
			t.Errorf("%s answered without the password: %v (want NOAUTH)", a, ask)
		}
	}

	p, r := sentinelClient(t, old, g.Password()), sentinelClient(t, g.ReplicaAddr(), g.Password())
	if got := serverRoleOf(t, p); got != "master" {
		t.Errorf("primary ROLE %s", got)
	}
	if got := serverRoleOf(t, r); got != "slave" {
		t.Errorf("replica ROLE %s", got)
	}
	_, linkPort, _ := net.SplitHostPort(link.Addr())
	if s := serverInfo(t, r, "replication"); !strings.Contains(s, "master_port:"+linkPort+"\r\n") || !strings.Contains(s, "master_link_status:up") {
		t.Errorf("replica does not replicate through the link (port %s):\n%s", linkPort, s)
	}
	if prio, err := r.ConfigGet(ctx, "replica-priority").Result(); err != nil || prio["replica-priority"] == "0" {
		t.Errorf("replica-priority %v %v: the replica could never be promoted", prio, err)
	}
	// The sentinels agree on the primary, and deem it down after
	// staggered delays.
	for i, a := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, Password: g.Password(), MaxRetries: -1})
		got, err := sc.GetMasterAddrByName(ctx, g.MasterName()).Result()
		if err != nil || net.JoinHostPort(got[0], got[1]) != old {
			t.Errorf("sentinel %s: primary %v %v, want %s", a, got, err, old)
		}
		m, err := sc.Master(ctx, g.MasterName()).Result()
		want := strconv.FormatInt(sentinel.Config{}.DownAfterOf(i).Milliseconds(), 10)
		if err != nil || m["down-after-milliseconds"] != want || m["quorum"] != strconv.Itoa(sentinel.Quorum) {
			t.Errorf("sentinel %s: down-after-milliseconds %q, quorum %q (%v); want %s, %d", a, m["down-after-milliseconds"], m["quorum"], err, want, sentinel.Quorum)
		}
		sc.Close()
	}

	// Replication works through the link...
	if err := p.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sentinelEventually(t, 5*time.Second, func() bool { return r.Get(ctx, "before").Val() == "1" }, "the write before the cut on the replica")

	// ...until it is cut: a write then stays on the primary.
	link.Cut()
	if err := p.Set(ctx, "during", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := r.Exists(ctx, "during").Val(); n != 0 {
		t.Fatal("the write made during the cut reached the replica")
	}

	primaryPid := pids[0]
	if err := g.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	redistest.Dead(t, []int{primaryPid})
	if err := g.KillPrimary(); err == nil {
		t.Error("a second KillPrimary before WaitFailover succeeded")
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	addr, took, err := g.WaitFailover(wctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover to %s took %s", addr, took)
	if addr != g.ReplicaAddr() {
		t.Fatalf("new primary %s, want the replica %s", addr, g.ReplicaAddr())
	}
	if now, err := g.PrimaryAddr(ctx); err != nil || now != addr {
		t.Errorf("PrimaryAddr() = %s, %v after the failover, want %s", now, err, addr)
	}
	if got := serverRoleOf(t, r); got != "master" {
		t.Errorf("promoted replica ROLE %s", got)
	}
	if r.Get(ctx, "before").Val() != "1" {
		t.Error("the replicated write is missing on the new primary")
	}
	if n := r.Exists(ctx, "during").Val(); n != 0 {
		t.Error("the write made during the cut is on the new primary")
	}

	// A client that finds the primary through the sentinels writes there.
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName(), SentinelAddrs: sentinels,
		Password: g.Password(), SentinelPassword: g.Password(), MaxRetries: -1})
	defer fc.Close()
	if err := fc.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r.Get(ctx, "after").Val() != "1" {
		t.Error("the failover client did not write to the new primary")
	}

	live := g.Pids()
	if len(live) != 1+sentinel.Sentinels || slices.Contains(live, primaryPid) {
		t.Errorf("Pids() after the kill = %v", live)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	redistest.Dead(t, pids)
	for _, a := range append(sentinels, g.ReplicaAddr(), old) {
		redistest.Refused(t, a)
	}
}

// Without redis-server, Start says so with an error that wraps
// exec.ErrNotFound (a test can tell it from a broken start), and leaves
// nothing behind.
func TestSentinelNeedsRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	g, err := sentinel.Start(context.Background(), sentinel.Config{})
	if err == nil {
		g.Stop()
		t.Fatal("Start without redis-server on PATH succeeded")
	}
	if !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("error %v does not wrap exec.ErrNotFound", err)
	}
}

// Start refuses a host that is not loopback.
func TestSentinelLoopbackOnly(t *testing.T) {
	if _, err := sentinel.Start(context.Background(), sentinel.Config{Host: "0.0.0.0"}); err == nil {
		t.Fatal("Start on 0.0.0.0 succeeded")
	}
}

func sentinelEventually(t *testing.T, d time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
