package handlers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// onlyReader hides a reader's length from httptest.NewRequest and
// net/http, so the request goes as if chunked (ContentLength -1).
type onlyReader struct{ io.Reader }

func limitRequest(method, target string, body io.Reader, length int64) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.ContentLength = length
	return r
}

// TestLimitsMiddleware: oversized targets and bodies, declared or chunked,
// are answered 414 and 413 as JSON before the handler runs; anything at the
// limits reaches the handler with its body intact.
func TestLimitsMiddleware(t *testing.T) {
	gin.SetMode(gin.TestMode)
	const maxBody, maxURI = 1000, 100
	var calls int
	var got []byte
	r := gin.New()
	r.Use(limits(maxBody, maxURI))
	r.Any("/echo", func(c *gin.Context) {
		calls++
		got, _ = io.ReadAll(c.Request.Body)
		c.String(http.StatusOK, "ok")
	})
	body := func(n int) []byte { return bytes.Repeat([]byte("b"), n) }
	pad := func(n int) string { return "/echo?q=" + strings.Repeat("x", n-len("/echo?q=")) }

	cases := []struct {
		name    string
		req     *http.Request
		code    int
		reached []byte // the body the handler read, when it runs
	}{
		{"no body", limitRequest("GET", "/echo", nil, 0), 200, []byte{}},
		{"body at the limit", limitRequest("POST", "/echo", bytes.NewReader(body(maxBody)), maxBody), 200, body(maxBody)},
		{"body one over", limitRequest("POST", "/echo", bytes.NewReader(body(maxBody+1)), maxBody+1), 413, nil},
		{"declared huge, nothing sent", limitRequest("POST", "/echo", strings.NewReader(""), 1<<40), 413, nil},
		{"GET with a body over", limitRequest("GET", "/echo", bytes.NewReader(body(5000)), 5000), 413, nil},
		{"chunked at the limit", limitRequest("POST", "/echo", onlyReader{bytes.NewReader(body(maxBody))}, -1), 200, body(maxBody)},
		{"chunked small", limitRequest("POST", "/echo", onlyReader{strings.NewReader("hello")}, -1), 200, []byte("hello")},
		{"chunked one over", limitRequest("POST", "/echo", onlyReader{bytes.NewReader(body(maxBody + 1))}, -1), 413, nil},
		{"chunked huge", limitRequest("PUT", "/echo", onlyReader{io.LimitReader(zeros{}, 1<<30)}, -1), 413, nil},
		{"target at the limit", limitRequest("GET", pad(maxURI), nil, 0), 200, []byte{}},
		{"target one over", limitRequest("GET", pad(maxURI+1), nil, 0), 414, nil},
		{"long path", limitRequest("GET", "/"+strings.Repeat("p", maxURI), nil, 0), 414, nil},
		{"long target and big body: 414 first", limitRequest("POST", pad(maxURI+1), bytes.NewReader(body(maxBody+1)), maxBody+1), 414, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls, got = 0, nil
			w := httptest.NewRecorder()
			r.ServeHTTP(w, tc.req)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if tc.code == 200 {
				if calls != 1 || !bytes.Equal(got, tc.reached) {
					t.Fatalf("handler ran %d times and read %d bytes, want once and %d", calls, len(got), len(tc.reached))
				}
				return
			}
			if calls != 0 {
				t.Fatalf("handler ran on a %d", w.Code)
			}
			jsonError(t, w)
			if c := w.Header().Get("Connection"); c != "close" {
				t.Errorf("Connection %q, want close", c)
			}
		})
	}
}

// TestLimitsInTheRouter: New refuses oversized requests on every route,
// and on unknown paths and wrong methods too, before anything reaches
// Redis: a 1 MiB POST /sale sells nothing.
func TestLimitsInTheRouter(t *testing.T) {
	mr, do := newLimitsRouter(t)
	if w := do(httptest.NewRequest("POST", "/reset?stock=10", nil)); w.Code != 200 {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	if w := do(httptest.NewRequest("POST", "/sale?lock=lua", strings.NewReader("small body"))); w.Code != 200 {
		t.Fatalf("a sale with a small body: %d %s", w.Code, w.Body)
	}
	before := mr.Dump()
	big := bytes.Repeat([]byte("x"), 1<<20)
	long := strings.Repeat("y", MaxURIBytes)
	for _, tc := range []struct {
		name string
		req  *http.Request
		code int
	}{
		{"1 MiB POST /sale", httptest.NewRequest("POST", "/sale?lock=lua", bytes.NewReader(big)), 413},
		{"1 MiB chunked POST /testLock", limitRequest("POST", "/testLock?lock=atomic", onlyReader{bytes.NewReader(big)}, -1), 413},
		{"1 MiB POST /reset", httptest.NewRequest("POST", "/reset?stock=5", bytes.NewReader(big)), 413},
		{"1 MiB PUT /sale (wrong method)", httptest.NewRequest("PUT", "/sale?lock=lua", bytes.NewReader(big)), 413},
		{"1 MiB POST /nowhere", httptest.NewRequest("POST", "/nowhere", bytes.NewReader(big)), 413},
		{"8 KiB query on /sale", httptest.NewRequest("GET", "/sale?lock=lua&pad="+long, nil), 414},
		{"8 KiB lock name", httptest.NewRequest("GET", "/sale?lock="+long, nil), 414},
		{"8 KiB query on /reset", httptest.NewRequest("POST", "/reset?stock=5&pad="+long, nil), 414},
		{"8 KiB path", httptest.NewRequest("GET", "/"+long, nil), 414},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(tc.req)
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, truncateBody(w))
			}
			jsonError(t, w)
			if w.Header().Get("X-Instance") != "limits-1" {
				t.Errorf("X-Instance %q", w.Header().Get("X-Instance"))
			}
			if after := mr.Dump(); after != before {
				t.Fatalf("Redis changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// newLimitsRouter is New over a miniredis with stock 10 and one sale.
func newLimitsRouter(t *testing.T) (*miniredis.Miniredis, func(*http.Request) *httptest.ResponseRecorder) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	router := New(Config{
		Instance:  "limits-1",
		Hosts:     []string{"example.com"}, // httptest.NewRequest's Host
		Inventory: inventory.New(rdb),
		Ladder:    ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second, Wait: 50 * time.Millisecond, Retry: lock.FixedSleep(5 * time.Millisecond)}, lock.RedlockOptions{}),
	})
	do := func(req *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		router.ServeHTTP(w, req)
		return w
	}
	return mr, do
}

// TestLimitsMalformedTargets: a query pair that does not parse is a 400,
// not silently dropped (the sale used to go on without it), and a trailing
// slash is a 404, not a redirect a client may follow to sell.
func TestLimitsMalformedTargets(t *testing.T) {
	mr, do := newLimitsRouter(t)
	if w := do(httptest.NewRequest("POST", "/reset?stock=10", nil)); w.Code != 200 {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	before := mr.Dump()
	for _, tc := range []struct {
		method, target string
		code           int
	}{
		{"GET", "/sale?lock=lua&%zz=1", 400},
		{"GET", "/sale?lock=lua&x;y=1", 400},
		{"GET", "/sale?lock=lua;x=1", 400},
		{"POST", "/testLock?lock=atomic&%", 400},
		{"POST", "/reset?stock=5&%zz", 400},
		{"GET", "/stock?%zz", 400},
		{"GET", "/sections?since=0&a;b", 400},
		{"GET", "/?%zz", 400},
		{"GET", "/sale/?lock=lua", 404},
		{"POST", "/testLock/?lock=lua", 404},
		{"POST", "/reset/?stock=5", 404},
		{"GET", "/sale%2F?lock=lua", 404},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			w := do(httptest.NewRequest(tc.method, tc.target, nil))
			if w.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.code, truncateBody(w))
			}
			jsonError(t, w)
			if after := mr.Dump(); after != before {
				t.Fatalf("Redis changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func jsonError(t *testing.T, w *httptest.ResponseRecorder) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want JSON: %s", ct, truncateBody(w))
	}
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, truncateBody(w))
	}
	if msg, _ := body["error"].(string); msg == "" {
		t.Fatalf("no error in %s", truncateBody(w))
	}
}

func truncateBody(w *httptest.ResponseRecorder) string { return truncate(w.Body.String(), 200) }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
