package lb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/stack/proc"
)

// newProxy returns the built-in load balancer's handler: round robin over
// targets (base URLs such as "http://127.0.0.1:8081"), one attempt per
// request. A request that fails upstream is answered 502 with a JSON body
// and is never replayed to another instance: a sale is not idempotent, and
// a request the first instance may have served must not be served twice.
// A target that refused a connection is skipped for failTimeout, as
// nginx.conf's max_fails=1 fail_timeout=1s does (unless every target is).
//
// (net/http's Transport may itself resend a GET on a reused keep-alive
// connection that the server closed before answering; that goes to the same
// instance, and only when nothing at all was read back.)
func newProxy(targets []string) (*balancer, error) {
	if len(targets) == 0 {
		return nil, errors.New("stack: proxy: no targets")
	}
	us := make([]*url.URL, len(targets))
	for i, t := range targets {
		u, err := url.Parse(t)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("stack: proxy: bad target %q", t)
		}
		us[i] = u
	}
	b := &balancer{
		down:        make([]atomic.Bool, len(us)),
		inflight:    make([]atomic.Int64, len(us)),
		failedUntil: make([]atomic.Int64, len(us)),
	}
	b.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(us[r.In.Context().Value(targetKey{}).(int)])
			// Verbatim: ReverseProxy drops the query pairs that do not
			// parse, and the app would then serve the rest (a sale)
			// instead of refusing the request with a 400.
			r.Out.URL.RawQuery = r.In.URL.RawQuery
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		Transport: &http.Transport{
			Proxy: nil, // never an HTTP_PROXY from the environment
			DialContext: (&net.Dialer{
				Timeout:   2 * time.Second,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			DisableCompression:    true,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// As nginx.conf's 502 does, say whether the request reached
			// the instance: one never sent cannot have sold.
			body := map[string]string{"error": "bad gateway: " + err.Error(), "upstream": r.URL.Host}
			if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
				body["upstream_bytes_sent"] = "0"
				if i, ok := r.Context().Value(targetKey{}).(int); ok {
					b.failedUntil[i].Store(time.Now().Add(failTimeout).UnixNano())
				}
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			json.NewEncoder(w).Encode(body)
		},
	}
	return b, nil
}

// balancer picks the target of each request, round robin over those in
// the load balancer, and counts the requests in flight to each, so that
// Stack.Drain can take one out (setDown) and wait until nothing is on its
// way to it (idle) before stopping it.
type balancer struct {
	rp       *httputil.ReverseProxy
	next     atomic.Uint64
	down     []atomic.Bool
	inflight []atomic.Int64
	// failedUntil is when each target, which refused a connection, is
	// tried again (Unix ns; 0: never failed).
	failedUntil []atomic.Int64
}

// failTimeout is how long a target that refused a connection is skipped.
const failTimeout = time.Second

// targetKey carries the picked target's index to Rewrite.
type targetKey struct{}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, ok := b.pick()
	if !ok {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"no instance in the load balancer"}`+"\n")
		return
	}
	defer b.inflight[i].Add(-1)
	b.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, i)))
}

// pick returns the next target in the load balancer, counted in flight.
// It counts first and checks down again after: either setDown's caller
// then sees the count (idle waits for it), or this sees the target down.
func (b *balancer) pick() (int, bool) {
	n := uint64(len(b.down))
	start := b.next.Add(1) - 1
	now := time.Now().UnixNano()
	// First those not failed lately, then, if every one has, any.
	for _, skipFailed := range []bool{true, false} {
		for k := range n {
			i := int((start + k) % n)
			if b.down[i].Load() || skipFailed && b.failedUntil[i].Load() > now {
				continue
			}
			b.inflight[i].Add(1)
			if b.down[i].Load() {
				b.inflight[i].Add(-1)
				continue
			}
			return i, true
		}
	}
	return 0, false
}

// setDown takes target i out of the rotation (or puts it back).
func (b *balancer) setDown(i int, down bool) { b.down[i].Store(down) }

// idle waits until no request is in flight to target i.
func (b *balancer) idle(ctx context.Context, i int) error {
	for b.inflight[i].Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack: built-in proxy: %d request(s) still in flight to instance %d: %w", b.inflight[i].Load(), i, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// ProxyServer is the built-in load balancer, serving in this process:
// the stand-in for nginx (see newProxy).
type ProxyServer struct {
	listen  string // as asked; port 0: a free one
	targets []string
	Race    http.Handler // serves /race, /explore and /play in process; nil: they go to the targets
	srv     *http.Server
	bal     *balancer
	ln      net.Listener
	done    chan struct{}
}

func NewProxyServer(listen string, targets []string) *ProxyServer {
	return &ProxyServer{listen: listen, targets: targets}
}

// start listens and serves.
func (p *ProxyServer) Start(context.Context) error {
	h, err := newProxy(p.targets)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p.listen)
	if err != nil {
		return fmt.Errorf("stack: built-in proxy: %w", err)
	}
	p.ln, p.bal, p.done = ln, h, make(chan struct{})
	var handler http.Handler = h
	if p.Race != nil {
		// Not a ServeMux: it would clean paths and redirect (//sale, a
		// dot segment) where nginx passes them on for the app to refuse.
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/race" || r.URL.Path == "/explore" || r.URL.Path == "/play" {
				p.Race.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	// As nginx: a request's header and body within httplimit's bounds
	// (then as long as the instance takes to answer, up to the
	// transport's ResponseHeaderTimeout), a client address at most
	// httplimit.PerClient connections.
	p.srv = httplimit.Bound(&http.Server{
		Handler:     httplimit.Body(handler),
		IdleTimeout: 120 * time.Second,
	})
	go func() {
		defer close(p.done)
		p.srv.Serve(httplimit.Listen(ln, httplimit.PerClient))
	}()
	return nil
}

// ready returns once it routes to the instances.
func (p *ProxyServer) Ready(ctx context.Context) error {
	return routesReady(ctx, "http://"+p.Addr(), len(p.targets), nil)
}

// stop shuts the server down, letting the requests in flight finish for
// up to proc.StopGrace.
func (p *ProxyServer) Stop() error {
	if p.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), proc.StopGrace)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	<-p.done
	p.bal.rp.Transport.(*http.Transport).CloseIdleConnections()
	return err
}

func (p *ProxyServer) Addr() string { return p.ln.Addr().String() }
func (p *ProxyServer) Pid() int     { return 0 }

// SetDown takes target i out of the rotation and waits until nothing is
// in flight to it, or puts it back.
func (p *ProxyServer) SetDown(ctx context.Context, i int, down bool) error {
	p.bal.setDown(i, down)
	if down {
		return p.bal.idle(ctx, i)
	}
	return nil
}

func (p *ProxyServer) Summary() string {
	return fmt.Sprintf("lb: built-in Go reverse proxy on %s -> %d instances (round robin, no retry; in this process)",
		p.Addr(), len(p.targets))
}
