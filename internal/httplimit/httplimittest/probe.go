// Package httplimittest probes a server's header bounds
// (internal/httplimit) for tests.
package httplimittest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// Refuses sends a GET of path to addr with a header of size bytes and
// returns the status it got, or 0 if the server closed the connection
// instead (while the header was still being sent).
func Refuses(addr, path string, size int) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nX-Pad: " + strings.Repeat("x", size) + "\r\nConnection: close\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return 0, nil // closed on it
		}
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) {
			return 0, nil
		}
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// CutsSlowHeader sends a header to addr one line every 100 ms, never
// ending it, and returns how long the server took to close the
// connection; an error if it was still open after within.
func CutsSlowHeader(addr string, within time.Duration) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		c.SetReadDeadline(start.Add(within))
		b := make([]byte, 4096)
		for {
			if _, err := c.Read(b); err != nil {
				return // closed by the server (or our deadline: told apart below)
			}
		}
	}()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: " + addr + "\r\n")); err != nil {
		return 0, err
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-closed:
			took := time.Since(start)
			if took >= within {
				return took, fmt.Errorf("connection still open after %s", within)
			}
			return took, nil
		case <-t.C:
			c.Write([]byte(fmt.Sprintf("X-Slow-%d: x\r\n", i))) // fails once closed: the reader says so
		}
	}
}
