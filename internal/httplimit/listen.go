package httplimit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Listen wraps ln, a lab server's listener, in two bounds that no
// handler can set: a client address holds at most perClient connections
// at once (0: no bound; the app's, whose one client is the load
// balancer), one more is answered a JSON 503 too_many_connections and
// closed; and net/http's own refusals, which it writes on the connection
// as plain text before any handler runs (a malformed request, a header
// over MaxHeaderBytes, an unknown transfer coding, an HTTP version not
// 1.x), are written as JSON with a reason instead.
func Listen(ln net.Listener, perClient int) net.Listener {
	return &listener{Listener: ln, max: perClient, open: map[string]int{}}
}

type listener struct {
	net.Listener
	max int

	mu   sync.Mutex
	open map[string]int // connections per client address
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := clientAddr(c)
		l.mu.Lock()
		over := l.max > 0 && l.open[addr] >= l.max
		if !over {
			l.open[addr]++
		}
		l.mu.Unlock()
		if over {
			go refuse(c, l.max)
			continue
		}
		return &conn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *listener) release(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

// clientAddr is c's remote IP address.
func clientAddr(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// ReasonTooManyConnections is the reason of the 503 a client over
// PerClient gets, from nginx and from Listen alike.
const ReasonTooManyConnections = "too_many_connections"

// refuse answers a connection over its client's bound, without reading
// its request, and closes it.
func refuse(c net.Conn, max int) {
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(answer(http.StatusServiceUnavailable, map[string]string{
		"error":  fmt.Sprintf("too many connections from this address: at most %d at once (refused by the server)", max),
		"reason": ReasonTooManyConnections,
	}))
}

// answer is a whole HTTP/1.1 response of code with body as JSON, that
// closes the connection.
func answer(code int, body map[string]string) []byte {
	b, _ := json.Marshal(body)
	return []byte(fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(b), b))
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// plainHeaders follow the status line of net/http's own refusals, and
// of no handler's answer (net/http writes a handler's headers sorted:
// Connection before Content-Type).
const plainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// Write passes p on, but for one of net/http's own plain-text refusals,
// which it writes whole in one call: that goes as JSON.
func (c *conn) Write(p []byte) (int, error) {
	if j, ok := asJSON(p); ok {
		if _, err := c.Conn.Write(j); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// reasons are the reasons of net/http's own refusals, by status.
var reasons = map[int]string{
	http.StatusBadRequest:                  "bad_request",
	http.StatusRequestHeaderFieldsTooLarge: "too_large",
	http.StatusNotImplemented:              "not_implemented",
	http.StatusHTTPVersionNotSupported:     "http_version",
}

// asJSON rewrites one of net/http's plain-text refusals ("HTTP/1.1 400
// Bad Request" and plainHeaders, then its text) as JSON; false for
// anything else.
func asJSON(p []byte) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	end := bytes.Index(p[:min(len(p), 512)], []byte("\r\n"))
	if end < 0 || !bytes.HasPrefix(p[end:], []byte(plainHeaders)) {
		return nil, false
	}
	status := string(p[len("HTTP/1.1 "):end])
	code, err := strconv.Atoi(status[:min(3, len(status))])
	if err != nil || code < 400 {
		return nil, false
	}
	reason, ok := reasons[code]
	if !ok {
		reason = "bad_request"
	}
	text := strings.TrimSpace(string(p[end+len(plainHeaders):]))
	msg := strings.ToLower(http.StatusText(code))
	if _, detail, ok := strings.Cut(text, ": "); ok {
		msg += ": " + detail
	}
	return answer(code, map[string]string{"error": msg + " (refused by the server)", "reason": reason}), true
}

// Body bounds the reading of a request's body by the server's
// ReadTimeout (Bound: BodyTimeout), and no more: once the body is read
// (at once when there is none), it clears the read deadline, so that a
// handler that answers for longer (a race's stream, a request that waits
// for its lock behind a proxy) is not cut by it. Past a read deadline
// net/http ends the request's context.
func Body(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body == nil || r.Body == http.NoBody || (r.ContentLength == 0 && len(r.TransferEncoding) == 0) {
			rc.SetReadDeadline(time.Time{})
		} else {
			r.Body = &eofBody{ReadCloser: r.Body, eof: func() { rc.SetReadDeadline(time.Time{}) }}
		}
		h.ServeHTTP(w, r)
	})
}

// eofBody calls eof once its body is read to its end.
type eofBody struct {
	io.ReadCloser
	once sync.Once
	eof  func()
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.once.Do(b.eof)
	}
	return n, err
}
