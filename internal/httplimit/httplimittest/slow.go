package httplimittest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
)

// SlowClients are connections from one address, each holding a request
// it never finishes: the slow clients a server's per-address bound
// (httplimit) must hold without starving anyone else.
type SlowClients struct {
	n       int
	mu      sync.Mutex
	conns   []net.Conn
	closed  bool
	dialed  int
	settled int      // dial failures and answers read
	refused int      // answered 503 too_many_connections
	other   []string // dial errors and every other answer
	wg      sync.WaitGroup
}

// OpenSlow opens n connections to addr from 127.0.0.2, each sending req
// (a header and the start of a body it never finishes) and then reading
// its answer, if one comes. A few dialers open them, not n at once: a
// SYN backlog overflowed is a retry a second later, and n dials at once
// take the CPU the server under test needs.
func OpenSlow(addr, req string, n int) *SlowClients {
	s := &SlowClients{n: n}
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}
	for range 32 {
		s.wg.Go(func() {
			for range next {
				s.mu.Lock()
				closed := s.closed
				s.mu.Unlock()
				if closed {
					return
				}
				c, err := d.Dial("tcp", addr)
				s.mu.Lock()
				s.dialed++
				switch {
				case err != nil:
					s.settled++
					s.other = append(s.other, err.Error())
					s.mu.Unlock()
					continue
				case s.closed:
					s.mu.Unlock()
					c.Close()
					continue
				}
				s.conns = append(s.conns, c)
				s.mu.Unlock()
				c.Write([]byte(req))
				s.wg.Go(func() { s.read(c) })
			}
		})
	}
	return s
}

// read reads c's answer, if one comes before Close.
func (s *SlowClients) read(c net.Conn) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return // closed at the end, unanswered: held
	}
	var body map[string]string
	json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&body)
	resp.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled++
	if resp.StatusCode == http.StatusServiceUnavailable && body["reason"] == httplimit.ReasonTooManyConnections {
		s.refused++
	} else {
		s.other = append(s.other, fmt.Sprint(resp.Status, body))
	}
}

// Refused is how many were answered 503 too_many_connections so far.
func (s *SlowClients) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Other is what the others got so far: dial errors, other answers.
func (s *SlowClients) Other() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.other...)
}

// Settle waits until every connection was dialed and held of them all
// but held are settled (refused, answered otherwise, or not dialed),
// polling, for at most within. It says how many were refused, what the
// others got, and an error if they had not settled by then.
func (s *SlowClients) Settle(held int, within time.Duration) (refused int, other []string, err error) {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		s.mu.Lock()
		done := s.dialed == s.n && s.settled >= s.n-held
		refused, other, dialed, settled := s.refused, append([]string(nil), s.other...), s.dialed, s.settled
		s.mu.Unlock()
		if done {
			return refused, other, nil
		}
		if time.Now().After(deadline) {
			return refused, other, fmt.Errorf("after %s, %d of %d slow connections dialed, %d settled (%d refused), want all dialed and %d settled",
				within, dialed, s.n, settled, refused, s.n-held)
		}
	}
}

// Close closes every connection and waits for the dialers and readers.
func (s *SlowClients) Close() {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
