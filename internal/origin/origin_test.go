package origin_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/origin"
)

func TestParseHosts(t *testing.T) {
	got, err := origin.ParseHosts(" nginx, APP1 ,,app2., 10.0.0.5, [fd00::1]")
	if want := []string{"nginx", "app1", "app2", "10.0.0.5", "fd00::1"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("ParseHosts = %q, %v; want %q", got, err, want)
	}
	if got, err := origin.ParseHosts(""); err != nil || len(got) != 0 {
		t.Fatalf("ParseHosts(\"\") = %q, %v; want none", got, err)
	}
	for _, bad := range []string{"http://nginx", "nginx:80", "nginx/x", "a b", "user@nginx", "[fd00::1]:80", "nginx:"} {
		if _, err := origin.ParseHosts("app1," + bad); err == nil || !strings.Contains(err.Error(), "host") {
			t.Errorf("ParseHosts(%q): %v, want an error naming the host", bad, err)
		}
	}
}

// TestCheckLoopbackOnly: Hosts with no names (the stack's race service)
// allow loopback alone, and refuse another site's request.
func TestCheckLoopbackOnly(t *testing.T) {
	var hosts origin.Hosts
	for _, tc := range []struct {
		host   string
		header map[string]string
		want   int
	}{
		{"127.0.0.1:8080", nil, 0},
		{"localhost:8080", map[string]string{"Origin": "http://localhost:8080", "Sec-Fetch-Site": "same-origin"}, 0},
		{"evil.example:8080", map[string]string{"Origin": "http://evil.example:8080", "Sec-Fetch-Site": "same-origin"}, 421},
		{"127.0.0.1:8080", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"127.0.0.1:8080", map[string]string{"Origin": "http://evil.example"}, 403},
		{"127.0.0.1:8080", map[string]string{"Origin": "http://127.0.0.1:9090"}, 403},
		// Only a Referer (an older browser, a proxy that strips the
		// rest): another site's page is refused, the lab's own is not.
		{"127.0.0.1:8080", map[string]string{"Referer": "http://evil.example"}, 403},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://evil.example/page?x=1"}, 403},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://127.0.0.1:9090/"}, 403},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://user@127.0.0.1:8080/"}, 403},
		{"127.0.0.1:8080", map[string]string{"Referer": "not a url"}, 403},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://127.0.0.1:8080/learn/lua"}, 0},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://127.0.0.1:8080"}, 0},
		// Fetch Metadata or an Origin speak first.
		{"127.0.0.1:8080", map[string]string{"Referer": "http://evil.example/", "Sec-Fetch-Site": "same-origin"}, 0},
		{"127.0.0.1:8080", map[string]string{"Referer": "http://127.0.0.1:8080/", "Origin": "http://evil.example"}, 403},
	} {
		r := httptest.NewRequest("POST", "/race?lock=lua", nil)
		r.Host = tc.host
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		if status, reason, msg := hosts.Check(r); status != tc.want || (status != 0 && (reason == "" || msg == "")) {
			t.Errorf("Host %s, %v: %d %q %q, want %d", tc.host, tc.header, status, reason, msg, tc.want)
		}
	}
}
