package lb

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The built-in proxy skips a target taken out, and idle waits for the
// request still in flight to it.
func TestBalancerSetDownIdle(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("X-Instance", "slow")
	}))
	defer slow.Close()
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "fast")
	}))
	defer fast.Close()
	b, err := newProxy([]string{slow.URL, fast.URL})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(b)
	defer front.Close()
	defer b.rp.Transport.(*http.Transport).CloseIdleConnections()
	// A client of its own: no connection pooled by an earlier test (to a
	// server since gone, its port maybe front's now) stands in for a new
	// one. (CI saw the first request answered by fast once, 2026-11-25;
	// not reproduced in 300 runs alone.)
	client := front.Client()

	// The first request goes to slow (round robin from 0) and waits there.
	inflight := make(chan string, 1)
	go func() {
		resp, err := client.Post(front.URL, "", nil)
		if err != nil {
			inflight <- err.Error()
			return
		}
		resp.Body.Close()
		inflight <- resp.Header.Get("X-Instance")
	}()
	for b.inflight[0].Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	b.setDown(0, true)
	for range 4 {
		resp, err := client.Post(front.URL, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Instance"); got != "fast" {
			t.Errorf("a request went to %q with slow taken out", got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.idle(ctx, 0); err == nil {
		t.Error("idle returned with a request in flight")
	}
	close(release)
	if err := b.idle(context.Background(), 0); err != nil {
		t.Error(err)
	}
	if got := <-inflight; got != "slow" {
		t.Errorf("the request in flight got %q, want its answer from slow (in flight %d/%d)", got, b.inflight[0].Load(), b.inflight[1].Load())
	}
	b.setDown(1, true)
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/sale", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("every target down: %d, want 503", rec.Code)
	}
}

// The built-in proxy forwards the query as the client sent it: a pair
// that does not parse reaches the app, which refuses the request, instead
// of being dropped while the rest (a sale) goes through.
func TestProxyForwardsTheQueryVerbatim(t *testing.T) {
	got := make(chan string, 1)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.RawQuery
	}))
	defer app.Close()
	b, err := newProxy([]string{app.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"lock=lua&%zz=1", "lock=lua&x;y=1", "stock=5&%zz"} {
		b.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/sale?"+q, nil))
		if fwd := <-got; fwd != q {
			t.Errorf("forwarded %q, want %q as sent", fwd, q)
		}
	}
}

// A request the built-in proxy could not even send (the instance is down)
// says so, as nginx's 502 does: it cannot have sold.
func TestProxySaysWhenNothingReachedTheInstance(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	b, err := newProxy([]string{down.URL})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/sale?lock=lua", nil))
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), `"upstream_bytes_sent":"0"`) {
		t.Fatalf("got %d %s, want a 502 saying no byte was sent", w.Code, w.Body.String())
	}
}

// An instance that refused a connection is skipped for failTimeout, as
// nginx's max_fails=1 fail_timeout=1s skips it: one 502, not a third of
// the load while it restarts. With every instance failed, it still tries.
func TestProxySkipsAnInstanceThatRefused(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	b, err := newProxy([]string{down.URL, up.URL})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for range 10 {
		w := httptest.NewRecorder()
		b.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/sale?lock=lua", nil))
		codes[w.Code]++
	}
	if codes[http.StatusBadGateway] != 1 || codes[http.StatusOK] != 9 {
		t.Fatalf("answers %v: want one 502, then the live instance only", codes)
	}

	alone, err := newProxy([]string{down.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w := httptest.NewRecorder()
		alone.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/sale?lock=lua", nil))
		if w.Code != http.StatusBadGateway {
			t.Fatalf("every instance failed: %d, want it tried again (502)", w.Code)
		}
	}
}

// The built-in proxy round-robins and never replays a failed request to
// another instance.
func TestProxyNoRetry(t *testing.T) {
	var goodHits, badHits atomic.Int64
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		goodHits.Add(1)
		w.Header().Set("X-Instance", "good")
		io.WriteString(w, `{"sold":true}`)
	}))
	defer good.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		badHits.Add(1)
		// Dies mid-request: the sale may have happened, the answer is lost.
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer bad.Close()

	h, err := newProxy([]string{good.URL, bad.URL})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()

	var ok, badGateway int
	for range 10 {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req, _ := http.NewRequest(method, front.URL+"/sale?lock=none", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				ok++
			case http.StatusBadGateway:
				badGateway++
				var e struct{ Error, Upstream string }
				if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Upstream == "" {
					t.Errorf("502 body = %s (%v), want JSON with error and upstream", body, err)
				}
			default:
				t.Errorf("status %d: %s", resp.StatusCode, body)
			}
		}
	}
	if ok != 10 || badGateway != 10 {
		t.Errorf("%d ok, %d bad gateway; want 10 and 10 (round robin)", ok, badGateway)
	}
	if goodHits.Load() != 10 || badHits.Load() != 10 {
		t.Errorf("good saw %d, bad saw %d; want 10 each: a failed request was replayed",
			goodHits.Load(), badHits.Load())
	}
}

// The built-in proxy skips an instance that refused a connection for as
// long as nginx.conf's upstream does after one failure (max_fails=1
// fail_timeout=...): both load balancers answer the same way.
func TestProxyFailTimeoutIsNginxs(t *testing.T) {
	ds, err := ParseConf(readRepoFile(t, "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var servers int
	for _, http := range Find(ds, "http") {
		for _, up := range Find(http.Block, "upstream") {
			for _, s := range Find(up.Block, "server") {
				servers++
				params := map[string]string{}
				for _, a := range s.Args[1:] {
					k, v, _ := strings.Cut(a, "=")
					params[k] = v
				}
				if params["max_fails"] != "1" {
					t.Errorf("nginx.conf: server %s: max_fails=%q, the proxy skips after one failure", s.Args[0], params["max_fails"])
				}
				if d, err := time.ParseDuration(params["fail_timeout"]); err != nil || d != failTimeout {
					t.Errorf("nginx.conf: server %s: fail_timeout=%q, the proxy skips for %s", s.Args[0], params["fail_timeout"], failTimeout)
				}
			}
		}
	}
	if servers == 0 {
		t.Fatal("nginx.conf: no upstream servers")
	}
}
