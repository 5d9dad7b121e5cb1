package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// newProxy returns the built-in load balancer's handler: round robin over
// targets (base URLs such as "http://127.0.0.1:8081"), one attempt per
// request. A request that fails upstream is answered 502 with a JSON body
// and is never replayed to another instance: a sale is not idempotent, and
// a request the first instance may have served must not be served twice.
//
// (net/http's Transport may itself resend a GET on a reused keep-alive
// connection that the server closed before answering; that goes to the same
// instance, and only when nothing at all was read back.)
func newProxy(targets []string) (*httputil.ReverseProxy, error) {
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
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u := us[(next.Add(1)-1)%uint64(len(us))]
			r.SetURL(u)
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
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			json.NewEncoder(w).Encode(map[string]string{
				"error":    "bad gateway: " + err.Error(),
				"upstream": r.URL.Host,
			})
		},
	}
	return rp, nil
}

// proxyServer is the built-in load balancer serving in this process.
type proxyServer struct {
	srv  *http.Server
	rp   *httputil.ReverseProxy
	addr string
	done chan struct{}
}

func startProxy(addr string, targets []string) (*proxyServer, error) {
	h, err := newProxy(targets)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("stack: built-in proxy: %w", err)
	}
	p := &proxyServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
		},
		rp:   h,
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

func (p *proxyServer) stop(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	<-p.done
	p.rp.Transport.(*http.Transport).CloseIdleConnections()
	return err
}
