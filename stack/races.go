package stack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
)

// raceServer serves Config.Races in this process, on a loopback port of
// its own: the load balancer routes /race to it (nginx by a location the
// derived config adds, the built-in proxy in process), so the page and
// curl race at the load balancer's address while the instances under
// test run only the app. It has no write timeout: a race streams its
// events for up to its own bound.
type raceServer struct {
	h    http.Handler
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func (r *raceServer) Start(context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stack: race server: %w", err)
	}
	r.ln, r.done = ln, make(chan struct{})
	// A request's header and body within httplimit's bounds, a stream as
	// long as the race's own bound once they are read; a client address
	// at most httplimit.PerClient connections.
	r.srv = httplimit.Bound(&http.Server{Handler: httplimit.Body(r.h), IdleTimeout: 120 * time.Second})
	go func() {
		defer close(r.done)
		r.srv.Serve(httplimit.Listen(ln, httplimit.PerClient))
	}()
	return nil
}

func (r *raceServer) Ready(context.Context) error { return nil } // listening is serving

func (r *raceServer) Addr() string { return r.ln.Addr().String() }

// stop ends the races in flight: a stack that stops has no load balancer
// left for them.
func (r *raceServer) Stop() error {
	if r.srv == nil {
		return nil
	}
	err := r.srv.Close()
	<-r.done
	if c, ok := r.h.(interface{ Close() }); ok {
		c.Close() // what the races started for themselves (a replay server)
	}
	return err
}
