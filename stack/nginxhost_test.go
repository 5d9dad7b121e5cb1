package stack

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
	"github.com/lockladder/lockladder/stack/lb"
	"github.com/lockladder/lockladder/stack/proc"
)

// nginx, on the config derived from the project's nginx.conf, passes the
// Host a client sent to the app as it was sent, port included: the app's
// Host check (421 for a name not the lab's: DNS rebinding) works through
// it, and so does its Origin check, which tells another port of the same
// host by that port (403).
func TestNginxPassesTheHost(t *testing.T) {
	bin, err := proc.LookPath("nginx")
	need.Real(t, "nginx", err)
	gin.SetMode(gin.TestMode)
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	defer rdb.Close()
	app := handlers.New(handlers.Config{Instance: "h-1", Inventory: inventory.New(rdb),
		Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second}, lock.RedlockOptions{})})
	var mu sync.Mutex
	var seen []string // the Hosts the app was sent
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host)
		mu.Unlock()
		app.ServeHTTP(w, r)
	}))
	defer up.Close()

	n := lb.NewNginx(bin, readRepoFile(t, "nginx.conf"), t.TempDir(), "127.0.0.1", "0", []string{up.Listener.Addr().String()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proc.Launch(ctx, n); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + n.Addr()
	_, port, _ := net.SplitHostPort(n.Addr())

	for _, c := range []struct {
		name, host, origin string
		want               int
		reason             string
	}{
		{"the address dialled", n.Addr(), "", 200, ""},
		{"localhost", "localhost:" + port, "", 200, ""},
		{"its own origin", n.Addr(), "http://" + n.Addr(), 200, ""},
		{"a rebinding name", "evil.example", "", 421, "host_not_allowed"},
		{"a rebinding name with the port", "evil.example:" + port, "", 421, "host_not_allowed"},
		{"another port's origin", n.Addr(), "http://127.0.0.1:1", 403, "cross_site"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req, _ := http.NewRequest(http.MethodGet, base+"/strategies", nil)
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body any // /strategies: an array; a refusal: an object
			json.NewDecoder(resp.Body).Decode(&body)
			m, _ := body.(map[string]any)
			if resp.StatusCode != c.want {
				t.Errorf("Host %q, Origin %q: %s %v, want %d", c.host, c.origin, resp.Status, m, c.want)
			}
			if c.reason != "" && (m == nil || m["reason"] != c.reason) {
				t.Errorf("Host %q, Origin %q: %v, want reason %s", c.host, c.origin, m, c.reason)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || seen[0] != c.host {
				t.Errorf("the app was sent Host %q, want %q as the client sent it", seen, c.host)
			}
		})
	}
}
