package proc

import (
	"net"
	"strconv"
	"testing"
)

// A reserved port stays bound until it is released, so ports picked in
// the meantime are others; released, it can be bound.
func TestReservePorts(t *testing.T) {
	ports, release, err := ReservePorts("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	addr := net.JoinHostPort("127.0.0.1", port)
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		release()
		t.Fatalf("%s could be bound while reserved", addr)
	}
	others, err := FreePorts("127.0.0.1", 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range others {
		if p == port {
			t.Fatalf("FreePorts handed out the reserved port %s", port)
		}
	}
	release()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s after release: %v", addr, err)
	}
	ln.Close()
}

// The ports come from below the kernel's ephemeral range, where no
// outgoing connection takes one while its server restarts, and are
// distinct.
func TestFreePortsBelowTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts("127.0.0.1", 200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	to := portsTo()
	for _, p := range ports {
		n, err := strconv.Atoi(p)
		if err != nil || n < portsFrom || n >= to {
			t.Errorf("port %s: want one in [%d, %d)", p, portsFrom, to)
		}
		if seen[p] {
			t.Errorf("port %s handed out twice", p)
		}
		seen[p] = true
	}
}
