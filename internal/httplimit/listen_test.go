package httplimit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
)

// serve serves h with Bound and Body on a Listen(perClient) listener,
// the request's whole read within readTimeout.
func serve(t *testing.T, h http.Handler, perClient int, readTimeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httplimit.Bound(&http.Server{Handler: httplimit.Body(h), ReadTimeout: readTimeout})
	go srv.Serve(httplimit.Listen(ln, perClient))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// raw sends req on a new connection to addr and reads the answer.
func raw(t *testing.T, addr, req string) (*http.Response, map[string]string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req[:min(len(req), 40)], err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]string
	if json.Unmarshal(b, &body) != nil {
		body = map[string]string{"raw": string(b)}
	}
	return resp, body
}

// TestRefusalsAreJSON: what net/http refuses before any handler runs is
// answered as JSON with a reason, not plain text; a handler's own
// answers, plain text and closing included, pass as they were.
func TestRefusalsAreJSON(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "the handler's own", http.StatusTeapot)
	}), 0, 0)
	for _, tc := range []struct {
		name, req string
		code      int
		reason    string
	}{
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version"},
		{"HTTP/3.1", "GET / HTTP/3.1\r\nHost: x\r\n\r\n", 505, "http_version"},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400, "bad_request"},
		{"a header line without a colon", "GET / HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n", 400, "bad_request"},
		{"two Content-Lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "bad_request"},
		{"an unknown transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not_implemented"},
		{"a header over the bound", "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("x", 40<<10) + "\r\n\r\n", 431, "too_large"},
	} {
		resp, body := raw(t, addr, tc.req)
		if resp.StatusCode != tc.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			body["reason"] != tc.reason || body["error"] == "" {
			t.Errorf("%s: %d %q %v, want %d as JSON with reason %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.code, tc.reason)
		}
	}
	resp, body := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusTeapot || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || !strings.Contains(body["raw"], "the handler's own") {
		t.Errorf("the handler's plain-text answer: %d %q %v, want it as it was", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestConnectionsPerClient: a client address holds at most perClient
// connections; one more is a JSON 503 too_many_connections; once one
// closes, the next is served.
func TestConnectionsPerClient(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) }), 3, 0)
	var held []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server has accepted them once each answers.
	for _, c := range held {
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a connection within the bound: %v %v", resp, err)
		}
	}
	resp, body := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusServiceUnavailable || body["reason"] != httplimit.ReasonTooManyConnections {
		t.Errorf("a 4th connection: %d %v, want 503 %s", resp.StatusCode, body, httplimit.ReasonTooManyConnections)
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, body := raw(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("once one closed: %d %v, want 200", resp.StatusCode, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range held[1:] {
		c.Close()
	}
}

// TestBodyIsBoundedNotTheAnswer: a body that comes slowly is cut within
// the server's read timeout, while a request without one may be answered
// for longer: its context lives on.
func TestBodyIsBoundedNotTheAnswer(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(3 * readTimeout):
			w.Write([]byte(`{"answered":"late"}`))
		case <-r.Context().Done():
		}
	}), 0, readTimeout)
	resp, body := raw(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	if resp.StatusCode != 200 || body["answered"] != "late" {
		t.Errorf("a request without a body answered after the read timeout: %d %v, want 200", resp.StatusCode, body)
	}
	resp, body = raw(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	if resp.StatusCode != 200 || body["answered"] != "late" {
		t.Errorf("a request with a whole body answered after the read timeout: %d %v, want 200", resp.StatusCode, body)
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); c.Close() }()
	io.ReadAll(c) // the answer, then the close
	if took := time.Since(start); took > readTimeout+2*time.Second || ctx.Err() != nil {
		t.Errorf("Content-Length 100 and 3 bytes: closed after %s, want within the read timeout (%s)", took, readTimeout)
	}
}
