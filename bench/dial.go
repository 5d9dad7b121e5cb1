package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// errDialerClosed is what a dial returns once the run has been cancelled.
var errDialerClosed = errors.New("bench: run cancelled")

// dialer dials TCP for one transport. It refuses any connection whose peer
// is not a loopback address (unless allowRemote), which also covers host
// names and redirects, and it tracks its open connections so that a
// cancelled run can cut requests in flight: vegeta builds its requests
// without a context, so closing the connections is the only way to stop
// them before the timeout.
type dialer struct {
	net.Dialer
	allowRemote bool

	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newDialer(timeout time.Duration, allowRemote bool) *dialer {
	return &dialer{
		Dialer:      net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second},
		allowRemote: allowRemote,
		conns:       make(map[*trackedConn]struct{}),
	}
}

// transport returns an HTTP/1.1 transport dialling through d, with no proxy:
// the target is this machine.
func (d *dialer) transport(idle int) *http.Transport {
	return &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        0, // no global limit; MaxIdleConnsPerHost rules
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
	}
}

// DialContext dials addr and checks the peer.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.isClosed() {
		return nil, errDialerClosed
	}
	c, err := d.Dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if !d.allowRemote {
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			c.Close()
			return nil, fmt.Errorf("%w: %s resolved to %s", ErrNotLoopback, addr, c.RemoteAddr())
		}
	}
	tc := &trackedConn{Conn: c, d: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		c.Close()
		return nil, errDialerClosed
	}
	d.conns[tc] = struct{}{}
	return tc, nil
}

func (d *dialer) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// closeAll closes every open connection and refuses new dials.
func (d *dialer) closeAll() {
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = make(map[*trackedConn]struct{})
	d.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	d    *dialer
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.d.mu.Lock()
		delete(c.d.conns, c)
		c.d.mu.Unlock()
	})
	return err
}
