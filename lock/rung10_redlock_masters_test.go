package lock_test

import (
	"net"
	"testing"
	"time"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
)

// Masters for the Redlock tests (redistest.StartMasters): dead and hung
// addresses, and how many of them hold a key.

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var blackHole = locktest.BlackHole

// redlockOpts: a TTL long enough that its default node timeout (TTL/10)
// absorbs a loaded machine, so that only tests about timeouts see them.
var redlockOpts = lock.Options{TTL: 5 * time.Second, Wait: 100 * time.Millisecond, Retry: lock.FixedSleep(5 * time.Millisecond)}
