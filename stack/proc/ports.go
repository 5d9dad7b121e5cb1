package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// The ports the stack's servers listen on come from below the kernel's
// ephemeral range (ip_local_port_range, 32768 to 60999 by default), not
// from a listen on port 0, which hands out a port of that range. A server
// that stops and starts again on its port (a backend-restart, an instance
// that crashed) would otherwise find it taken meanwhile by the source
// port of one of the many connections the tests open: etcd did, "bind:
// address already in use", in a matrix run. Below the range the kernel
// gives a port only to whoever asks for it by number.
//
// The band starts above redisfam.FreePortRun's runs (10000 to 22000, and
// their cluster bus ports 10000 higher).
const portsFrom = 22000

// portsTo is where the kernel's ephemeral range starts, at most 32768.
func portsTo() int {
	to := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo < to {
				to = lo
			}
		}
	}
	return to
}

// FreePort finds a free TCP port on host and releases it for a child
// process to bind.
func FreePort(host string) (string, error) {
	ports, err := FreePorts(host, 1)
	if err != nil {
		return "", err
	}
	return ports[0], nil
}

// FreePorts reserves n distinct free TCP ports on host at once and
// releases them for child processes to bind. Ports for several children
// started together must come from one call: a port released by one
// FreePort call may be handed out again by the next before its child has
// bound it.
func FreePorts(host string, n int) ([]string, error) {
	ports, release, err := ReservePorts(host, n)
	if err != nil {
		return nil, err
	}
	release()
	return ports, nil
}

// ReservePorts finds n distinct free TCP ports on host, below the
// ephemeral range where there is room (else from the kernel, port 0),
// and keeps them bound until release is called: ports picked meanwhile
// cannot be them.
func ReservePorts(host string, n int) (ports []string, release func(), err error) {
	var lns []net.Listener
	release = func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	to := portsTo()
	tries := 0
	for len(lns) < n {
		port := "0"
		if to-portsFrom >= 1000 && tries < 50*n {
			port = strconv.Itoa(portsFrom + rand.IntN(to-portsFrom))
		}
		tries++
		ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
		if err != nil {
			if port != "0" {
				continue // taken: another
			}
			release()
			return nil, nil, fmt.Errorf("stack: free port on %s: %w", host, err)
		}
		lns = append(lns, ln)
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ports = append(ports, p)
	}
	return ports, release, nil
}
