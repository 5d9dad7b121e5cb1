package stack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit/httplimittest"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
)

// The race port refuses a 900 KB header and cuts a slow one within
// httplimit.HeaderTimeout.
func TestRaceServerHeaderLimits(t *testing.T) {
	t.Parallel()
	r := &raceServer{h: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	httplimittest.WantBounded(t, r.Addr(), "/race")
}

// nginx, on the derived config, does the same.
func TestNginxHeaderLimits(t *testing.T) {
	t.Parallel()
	bin, err := proc.LookPath("nginx")
	need.Real(t, "nginx", err)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	n := lb.NewNginx(bin, readRepoFile(t, "nginx.conf"), t.TempDir(), "127.0.0.1", "0", []string{up.Listener.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proc.Launch(ctx, n); err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	httplimittest.WantBounded(t, n.Addr(), "/healthz")
}
