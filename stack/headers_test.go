package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
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

// nginx holds at most httplimit.RacePerClient requests of one client
// address to the race server, whose one client it is: 40 bodies that
// never finish from 127.0.0.2 get 32 through and 8 refused 503, and a
// /play from 127.0.0.1 meanwhile reaches the race server.
func TestNginxBoundsRacesPerClient(t *testing.T) {
	t.Parallel()
	bin, err := proc.LookPath("nginx")
	need.Real(t, "nginx", err)
	races := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // a slow body holds its request here
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"played":true}`))
	}))
	defer races.Close()
	defer races.CloseClientConnections()
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	n := lb.NewNginx(bin, readRepoFile(t, "nginx.conf"), t.TempDir(), "127.0.0.1", "0", []string{up.Listener.Addr().String()})
	n.Race = races.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := proc.Launch(ctx, n); err != nil {
		t.Fatal(err)
	}
	defer n.Stop()

	const slow = httplimit.RacePerClient + 8
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	refused := make(chan bool, slow)
	for range slow {
		c, err := d.DialContext(ctx, "tcp", n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /play HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{", n.Addr())
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // held, then closed
			}
			var body map[string]string
			json.NewDecoder(resp.Body).Decode(&body)
			refused <- resp.StatusCode == http.StatusServiceUnavailable && body["reason"] == httplimit.ReasonTooManyConnections
		}()
	}
	for i := range slow - httplimit.RacePerClient {
		select {
		case ok := <-refused:
			if !ok {
				t.Fatalf("slow /play %d answered, not refused 503 %s", i+1, httplimit.ReasonTooManyConnections)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d slow /play over the bound refused, want %d", i, slow-httplimit.RacePerClient, slow-httplimit.RacePerClient)
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+n.Addr()+"/play", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != `{"played":true}` {
		t.Errorf("a /play from 127.0.0.1 beside %d slow ones from 127.0.0.2: %s %s, want the race server's 200", slow, resp.Status, b)
	}
	select {
	case ok := <-refused:
		t.Errorf("one more of the slow /play answered (refused %v): want %d held", ok, httplimit.RacePerClient)
	default:
	}
}
