package redisfam

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/proc"
)

// A port picked free and taken before redis-server bound it (by another
// test package's server, or a connection's source port) makes ours exit
// with "Address already in use": ready then starts it on another port, as
// it does when another Redis answers there. It used to fail the start
// ("exited: exit status 1"), and with it a test of another package.
func TestRedisPickedPortTakenFirst(t *testing.T) {
	bin, err := proc.LookPath("redis-server")
	need.Real(t, "redis-server", err)
	// The port ours will try first, held by a listener that is no Redis:
	// it closes every connection, so the PID check learns nothing there.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	go func() {
		for {
			c, err := taken.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(taken.Addr().String())

	r, err := newRedisServer(bin, "127.0.0.1:0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	if err := r.makeWork(); err != nil {
		t.Fatal(err)
	}
	r.version = proc.BinaryVersion(r.bin, `v=(\S+)`, "--version")
	r.port = port // as if proc.FreePort had picked it just before the listener took it
	if err := r.spawn(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("ready with its picked port taken: %v, want it started on another", err)
	}
	if r.port == port {
		t.Fatalf("ready reports port %s, the taken one", port)
	}
	if err := redisPing(ctx, r.Addr(), r.password); err != nil {
		t.Fatalf("PING %s: %v", r.Addr(), err)
	}
}
