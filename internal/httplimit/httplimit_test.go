package httplimit_test

import (
	"net"
	"net/http"
	"testing"

	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/internal/httplimit/httplimittest"
)

// A server with Bound (the app's, the race port's, the built-in load
// balancer's) refuses a 900 KB header, serves one of a few KB, and cuts
// a header sent slowly within HeaderTimeout.
func TestBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httplimit.Bound(&http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})})
	go srv.Serve(ln)
	defer srv.Close()
	httplimittest.WantBounded(t, ln.Addr().String(), "/")
}
