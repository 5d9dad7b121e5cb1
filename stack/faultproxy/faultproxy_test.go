package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/stack/faultproxy"
)

// newFaultProxy starts a FaultProxy in front of upstream, closed when the
// test ends.
func newFaultProxy(t *testing.T, upstream string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// proxyClient is a go-redis client through addr as the app builds one (no
// retries, one dial attempt) with the given read timeout. A call's
// context deadline, when sooner, bounds it instead: a check that a call
// times out passes a short one (cutWait), the others wait as long as
// the machine needs (answered).
func proxyClient(t *testing.T, addr string, readTimeout time.Duration) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           answered,
		ReadTimeout:           readTimeout,
		WriteTimeout:          readTimeout,
		MaxRetries:            -1,
		DialerRetries:         1,
		PoolSize:              4,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// answered bounds what must succeed: a reply through the proxy, however
// loaded the machine. Reaching it fails the test loudly; it is not what
// is tested.
const answered = 30 * time.Second

// cutWait is how long a call through a cut waits before it is judged to
// time out: what must not come, not what must.
const cutWait = 200 * time.Millisecond

// within returns a context that ends after d.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// isTimeout reports whether err is a network timeout (not a refused or
// reset connection, not EOF).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestFaultProxyForwards(t *testing.T) {
	direct, addr := redistest.Start(t)
	p := newFaultProxy(t, addr)
	if p.Upstream() != addr {
		t.Errorf("Upstream() = %q, want %q", p.Upstream(), addr)
	}
	if host, _, err := net.SplitHostPort(p.Addr()); err != nil || host != "127.0.0.1" {
		t.Errorf("Addr() = %q, want a 127.0.0.1 port", p.Addr())
	}
	ctx := context.Background()
	rdb := proxyClient(t, p.Addr(), answered)
	if err := rdb.Set(ctx, "k", strings.Repeat("x", 100<<10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := direct.StrLen(ctx, "k").Result(); err != nil || got != 100<<10 {
		t.Fatalf("STRLEN k direct = %d, %v; want %d", got, err, 100<<10)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || len(got) != 100<<10 {
		t.Fatalf("GET k via proxy: %d bytes, %v", len(got), err)
	}
}

// Latency delays the replies, keeps their order, and times out a client
// whose read timeout is below it, although the command ran: a lost reply.
func TestFaultProxyLatency(t *testing.T) {
	direct, addr := redistest.Start(t)
	p := newFaultProxy(t, addr)
	ctx := context.Background()

	p.SetLatency(150 * time.Millisecond)
	if p.Latency() != 150*time.Millisecond {
		t.Errorf("Latency() = %v", p.Latency())
	}
	slow := proxyClient(t, p.Addr(), answered)
	start := time.Now()
	cmds, err := slow.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for range 200 {
			pipe.Incr(ctx, "n")
		}
		return nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if got := c.(*redis.IntCmd).Val(); got != int64(i+1) {
			t.Fatalf("reply %d = %d: replies out of order", i, got)
		}
	}
	if took < 150*time.Millisecond {
		t.Errorf("a pipeline through 150ms of latency took %v", took)
	}

	// Below the read timeout: the call times out, the SET ran anyway. (The
	// client connects first: a new connection's HELLO would time out
	// before the SET is sent.)
	fast := proxyClient(t, p.Addr(), 100*time.Millisecond)
	p.SetLatency(0)
	if err := fast.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	p.SetLatency(400 * time.Millisecond)
	err = fast.Set(ctx, "lost", "ran", 0).Err()
	if !isTimeout(err) {
		t.Fatalf("SET through 400ms of latency with a 100ms read timeout: %v, want a timeout", err)
	}
	if got, err := direct.Get(ctx, "lost").Result(); err != nil || got != "ran" {
		t.Errorf("GET lost direct = %q, %v: the timed-out SET should have run", got, err)
	}

	// Latency 0: the same client works again (its timed-out connection was
	// dropped by go-redis; a new one is dialled).
	p.SetLatency(0)
	if err := fast.Ping(ctx).Err(); err != nil {
		t.Errorf("PING with latency 0: %v", err)
	}
}

// A cut drops bytes both ways and closes nothing: calls time out, new
// connections are accepted and blackholed; Heal closes the connections
// that lived through it and forwards new ones.
func TestFaultProxyCutHeal(t *testing.T) {
	direct, addr := redistest.Start(t)
	p := newFaultProxy(t, addr)
	ctx := context.Background()

	rdb := proxyClient(t, p.Addr(), answered)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := io.WriteString(raw, "*1\r\n$4\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(answered))
	buf := make([]byte, 64)
	if n, err := raw.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("raw PING: %q, %v", buf[:n], err)
	}

	p.Cut()
	if !p.Cuts() {
		t.Error("Cuts() = false after Cut")
	}
	if err := rdb.Set(within(t, cutWait), "cut", "through", 0).Err(); !isTimeout(err) {
		t.Errorf("SET during a cut: %v, want a timeout", err)
	}
	// Open, not refused: a new client dials fine and times out too.
	fresh := proxyClient(t, p.Addr(), answered)
	if err := fresh.Ping(within(t, cutWait)).Err(); !isTimeout(err) {
		t.Errorf("PING on a connection made during the cut: %v, want a timeout", err)
	}
	if _, err := io.WriteString(raw, "*3\r\n$3\r\nSET\r\n$6\r\nrawcut\r\n$1\r\n1\r\n"); err != nil {
		t.Fatalf("write during the cut: %v", err)
	}
	raw.SetReadDeadline(time.Now().Add(cutWait))
	if n, err := raw.Read(buf); !isTimeout(err) {
		t.Errorf("read during the cut: %q, %v; want a timeout (the connection stays open)", buf[:n], err)
	}
	for _, k := range []string{"cut", "rawcut"} {
		if err := direct.Get(ctx, k).Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET %s direct: %v; a command sent during the cut reached Redis", k, err)
		}
	}

	p.Heal()
	if p.Cuts() {
		t.Error("Cuts() = true after Heal")
	}
	// The connection that lived through the cut is closed.
	raw.SetReadDeadline(time.Now().Add(answered))
	if n, err := raw.Read(buf); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after Heal on a connection open during the cut: %q, %v; want it closed", buf[:n], err)
	}
	for name, c := range map[string]*redis.Client{"old client": rdb, "client made during the cut": fresh, "new client": proxyClient(t, p.Addr(), answered)} {
		if err := c.Set(ctx, "healed", name, 0).Err(); err != nil {
			t.Errorf("%s: SET after Heal: %v", name, err)
		}
	}
	p.Heal() // healing a healed proxy does nothing
}

// Close ends every connection, the delayed and the blackholed ones too, and
// returns only when all of the proxy's goroutines have.
func TestFaultProxyCloseLeaksNothing(t *testing.T) {
	_, addr := redistest.Start(t)
	p, err := faultproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	idle := proxyClient(t, p.Addr(), answered)
	if err := idle.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A reply waiting out a long latency.
	p.SetLatency(time.Minute)
	waiting := proxyClient(t, p.Addr(), time.Minute)
	res := make(chan error, 1)
	before := proxyGoroutines()
	go func() { res <- waiting.Ping(ctx).Err() }()
	// Once its connection is in (more of the proxy's goroutines), a
	// connection accepted during a cut.
	waitFor(t, "the delayed PING's connection", func() bool { return proxyGoroutines() > before })
	p.Cut()
	before = proxyGoroutines()
	black, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer black.Close()
	io.WriteString(black, "*1\r\n$4\r\nPING\r\n")
	waitFor(t, "the blackholed connection", func() bool { return proxyGoroutines() > before })

	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > time.Minute/2 {
		t.Errorf("Close took %v with a reply delayed a minute", took)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	select {
	case err := <-res:
		if err == nil {
			t.Error("the delayed PING succeeded after Close")
		}
	case <-time.After(answered):
		t.Error("the delayed PING still waits after Close")
	}
	black.SetReadDeadline(time.Now().Add(answered))
	if _, err := black.Read(make([]byte, 8)); isTimeout(err) {
		t.Error("the blackholed connection is still open after Close")
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), answered); err == nil {
		c.Close()
		t.Error("the proxy still accepts connections after Close")
	}
	// Close returned once every goroutine did: none may be left.
	if n := proxyGoroutines(); n > 0 {
		t.Fatalf("%d proxy goroutines left after Close:\n%s", n, goroutineDump())
	}
}

// waitFor waits until cond holds, failing the test if it never does
// within answered.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(answered)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not there after %s", what, answered)
		}
		time.Sleep(time.Millisecond)
	}
}

// A connection whose upstream cannot be dialled is closed, not left hanging.
func TestFaultProxyUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newFaultProxy(t, addr)
	// A hanging connection would time out (answered): the error must come
	// from the proxy closing it.
	rdb := proxyClient(t, p.Addr(), answered)
	err = rdb.Ping(context.Background()).Err()
	if err == nil || isTimeout(err) {
		t.Errorf("PING through a proxy to nothing: %v, want the connection closed", err)
	}
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// proxyGoroutines counts goroutines running the FaultProxy's code.
func proxyGoroutines() int {
	n := 0
	for _, g := range strings.Split(goroutineDump(), "\n\n") {
		if strings.Contains(g, "faultproxy.(*Proxy)") || strings.Contains(g, "faultproxy.(*faultConn)") {
			n++
		}
	}
	return n
}
