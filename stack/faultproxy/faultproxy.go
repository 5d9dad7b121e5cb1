// Package faultproxy is a TCP proxy that injects network faults between
// the lab's clients and a Redis: latency on the replies, and a cut that
// neither closes nor refuses (see Proxy).
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy in this process that sits between the app
// instances and a Redis (the main one or a Redlock master) to inject
// network faults: latency on the replies, and a partition that neither
// closes nor refuses, so that clients see timeouts, not errors. That is
// the failure that matters for the locks: a command whose reply never
// came may still have run, and a client that resends it (go-redis does by
// default) runs it twice.
//
// It is deliberately small and in-process rather than toxiproxy: toxiproxy
// as a library would pull its server, prometheus and their dependencies
// into go.mod, and as a binary it would be one more thing to install; the
// two faults the scenarios need fit in a few hundred lines of stdlib.
//
// It dials the upstream once per accepted connection, so it survives the
// upstream restarting on the same address: connections open at the
// restart are lost, later ones reach the new server. Its methods are safe
// for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string
	latency  atomic.Int64 // time.Duration added to every upstream-to-client chunk

	mu     sync.Mutex // guards cut, closed, conns
	cut    bool
	closed bool
	conns  map[*faultConn]struct{}

	done chan struct{} // closed by Close: every goroutine returns
	wg   sync.WaitGroup
}

// faultConn is one proxied connection: the client's and, unless it was
// accepted during a cut, the upstream's.
type faultConn struct {
	p        *Proxy
	client   net.Conn
	upstream net.Conn // nil: blackholed from the start (accepted during a cut)

	// cut is set when a cut begins while the connection is open (or it was
	// accepted during one); it is never cleared: the streams have lost
	// bytes, and Heal closes the connection instead.
	cut       atomic.Bool
	closeOnce sync.Once
	closed    chan struct{}
}

// chunk is what one read from the upstream returned, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// faultDialTimeout bounds the dial to the upstream for each new connection;
// a failed dial closes the client's connection, as a refused one would.
const faultDialTimeout = 2 * time.Second

// New listens on a free port of 127.0.0.1 and forwards every
// connection to upstream (host:port), with no fault until one is set.
func New(upstream string) (*Proxy, error) {
	p, err := Prepare(upstream)
	if err != nil {
		return nil, err
	}
	if err := p.Start(context.Background()); err != nil {
		return nil, err
	}
	return p, nil
}

// Prepare is a Proxy to upstream, not started: Start listens (the
// stack launches it with its other servers).
func Prepare(upstream string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(upstream); err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", upstream, err)
	}
	return &Proxy{
		upstream: upstream,
		conns:    map[*faultConn]struct{}{},
		done:     make(chan struct{}),
	}, nil
}

// start listens on a free port of 127.0.0.1 and accepts.
func (p *Proxy) Start(context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("faultproxy: %w", err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept()
	return nil
}

// ready: it serves once it listens.
func (p *Proxy) Ready(context.Context) error { return nil }

func (p *Proxy) Stop() error { return p.Close() }

// Addr is the host:port clients connect to instead of the upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the host:port the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// SetLatency delays every chunk from the upstream to its client until d
// after the proxy read it, in order, on the connections open now and on
// new ones (0: none). A client whose read timeout is below d times out on
// every call, while the upstream has run each command: the lost-reply
// fault. Requests to the upstream are not delayed.
func (p *Proxy) SetLatency(d time.Duration) {
	p.latency.Store(int64(max(d, 0)))
}

// Latency is the delay SetLatency set.
func (p *Proxy) Latency() time.Duration { return time.Duration(p.latency.Load()) }

// Cut starts a network partition: from now on the bytes of every
// connection, in both directions, are read and dropped, never forwarded,
// and no connection is closed. New connections are accepted and
// blackholed too (the upstream is not dialled). A client therefore sees
// its calls time out, never a refused or reset connection. (A chunk whose
// write had already begun when Cut was called still arrives.)
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.cut.Store(true)
	}
}

// Heal ends a partition: new connections are forwarded again, and every
// connection that was open during the cut is closed, since its streams
// lost bytes (a Redis client would otherwise read a reply meant for an
// earlier command). Clients reconnect. Healing a proxy that is not cut
// does nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	var lost []*faultConn
	for c := range p.conns {
		if c.cut.Load() {
			lost = append(lost, c)
		}
	}
	p.mu.Unlock()
	for _, c := range lost {
		c.close()
	}
}

// Cuts reports whether a partition is on (between Cut and Heal).
func (p *Proxy) Cuts() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops listening, closes every connection and waits for all of the
// proxy's goroutines to return. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	close(p.done)
	conns := make([]*faultConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	var err error
	if p.ln != nil { // nil: never started
		err = p.ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// A listener error other than Close: back off briefly rather
			// than spin (the kernel may be out of file descriptors).
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		c := &faultConn{p: p, client: client, closed: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		c.cut.Store(p.cut)
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.serve()
	}
}

// serve dials the upstream (unless the connection is blackholed from the
// start) and runs the connection's three pumps until it is closed.
func (c *faultConn) serve() {
	defer c.p.wg.Done()
	defer c.close()
	if !c.cut.Load() {
		d := net.Dialer{Timeout: faultDialTimeout}
		up, err := d.Dial("tcp", c.p.upstream)
		if err != nil {
			return // the client sees its connection closed
		}
		c.p.mu.Lock()
		c.upstream = up
		c.p.mu.Unlock()
		select {
		case <-c.closed: // closed while dialling (Close, Heal)
			up.Close()
			return
		default:
		}
	}
	if c.upstream == nil {
		// Blackholed: read and drop until the client or Heal/Close ends it.
		c.drain(c.client)
		return
	}
	replies := make(chan chunk, 256)
	var wg sync.WaitGroup
	wg.Go(func() { c.forward() })
	wg.Go(func() { c.readReplies(replies) })
	wg.Go(func() { c.deliver(replies) })
	wg.Wait()
}

// drain reads from r and drops everything until it fails.
func (c *faultConn) drain(r net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := r.Read(buf); err != nil {
			return
		}
	}
}

// forward copies client to upstream, dropping what it reads while cut.
func (c *faultConn) forward() {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 && !c.cut.Load() {
			if _, werr := c.upstream.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readReplies reads the upstream and queues each chunk, stamped with when
// it was read, for deliver; while cut it drops them instead. It closes
// replies when the upstream is done, so that deliver hands over what is
// queued before it closes the client's connection.
func (c *faultConn) readReplies(replies chan<- chunk) {
	defer close(replies)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.upstream.Read(buf)
		if n > 0 && !c.cut.Load() {
			ch := chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
			select {
			case replies <- ch:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes the queued chunks to the client in order, each no sooner
// than the latency in force at that moment after it was read; a chunk
// whose time comes during a cut is dropped. When the upstream is done it
// closes the client's connection, unless the connection is cut: across a
// partition the client cannot see the upstream go, so its connection stays
// open (forward keeps dropping what it sends) until Heal or Close.
func (c *faultConn) deliver(replies <-chan chunk) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for ch := range replies {
		if wait := time.Until(ch.at.Add(c.p.Latency())); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-c.closed:
				return
			}
		}
		if c.cut.Load() {
			continue
		}
		if _, err := c.client.Write(ch.b); err != nil {
			c.close()
			return
		}
	}
	if !c.cut.Load() {
		c.close()
	}
}

// close closes both sides once and forgets the connection; the pumps then
// fail and return.
func (c *faultConn) close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.client.Close()
		c.p.mu.Lock()
		up := c.upstream
		delete(c.p.conns, c)
		c.p.mu.Unlock()
		if up != nil {
			up.Close()
		}
	})
}
