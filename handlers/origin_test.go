package handlers_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/lockladder/lockladder/handlers"
)

// TestOriginRefusesOtherSitesAndHosts: a request another site's page sent
// (Sec-Fetch-Site cross-site or same-site, an Origin that is not the
// Host) is a 403 cross_site, and one for a Host the lab does not serve (DNS
// rebinding) a 421 host_not_allowed; neither changes anything. Loopback,
// the listen address and the names given pass on any port, and so do
// requests with no Origin nor Sec-Fetch-Site (curl, ab, the bench), a
// same-origin one, and one typed in the address bar (none). An Origin
// must match the Host port and all (nginx passes it on as sent); a Host
// without a port is on its scheme's.
func TestOriginRefusesOtherSitesAndHosts(t *testing.T) {
	e := newEnvConfig(t, func(c *handlers.Config) {
		c.Addr = "10.1.2.3:8080"
		c.Hosts = append(c.Hosts, "nginx", "APP1.") // and example.com, for e.do
	})
	e.do(t, "POST", "/reset?stock=1000")
	type hdr = map[string]string
	for _, tc := range []struct {
		name, method, target, host string
		header                     hdr
		want                       int
	}{
		// Hosts
		{"loopback", "POST", "/sale?lock=lua", "127.0.0.1:8080", nil, 200},
		{"loopback, another address", "POST", "/sale?lock=lua", "127.0.0.2", nil, 200},
		{"localhost", "POST", "/sale?lock=lua", "localhost", nil, 200},
		{"localhost in capitals, any port", "POST", "/sale?lock=lua", "LOCALHOST:1", nil, 200},
		{"::1", "POST", "/sale?lock=lua", "[::1]:8080", nil, 200},
		{"::1 without a port", "POST", "/sale?lock=lua", "[::1]", nil, 200},
		{"127.0.0.1 in v6", "POST", "/sale?lock=lua", "[::ffff:127.0.0.1]:80", nil, 200},
		{"the listen address", "GET", "/testLock?lock=lua", "10.1.2.3:8080", nil, 200},
		{"the listen address, another port", "GET", "/testLock?lock=lua", "10.1.2.3:80", nil, 200},
		{"a name given", "POST", "/sale?lock=lua", "nginx", nil, 200},
		{"a name given, with a port", "GET", "/metrics", "app1:8080", nil, 200},
		{"no Host (HTTP/1.0)", "POST", "/sale?lock=lua", "", nil, 200},
		{"another name", "POST", "/sale?lock=lua", "evil.example", nil, 421},
		{"another name, the lab's port", "POST", "/sale?lock=lua", "evil.example:8080", nil, 421},
		{"a name under localhost's", "POST", "/sale?lock=lua", "localhost.evil.example", nil, 421},
		{"a name that resolves to 127.0.0.1", "POST", "/sale?lock=lua", "127.0.0.1.nip.io:8080", nil, 421},
		{"a service not named", "POST", "/sale?lock=lua", "app2:8080", nil, 421},
		{"every interface", "POST", "/sale?lock=lua", "0.0.0.0:8080", nil, 421},
		{"another address", "POST", "/reset?stock=5", "10.1.2.4:8080", nil, 421},
		{"rebinding the page", "GET", "/", "evil.example", nil, 421},
		{"rebinding, same-origin to the browser", "POST", "/sale?lock=lua", "evil.example",
			hdr{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"}, 421},

		// Sec-Fetch-Site
		{"cross-site", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site (another port)", "GET", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site reset", "POST", "/reset?stock=5", "localhost:8080", hdr{"Sec-Fetch-Site": "cross-site"}, 403},
		{"cross-site image", "GET", "/testLock?lock=atomic", "localhost:8080",
			hdr{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, 403},
		{"cross-site link to a sale", "GET", "/sale?lock=lua", "localhost:8080",
			hdr{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 403},
		{"cross-site frame of the page", "GET", "/", "localhost:8080",
			hdr{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, 403},
		{"cross-site link to the page", "GET", "/", "localhost:8080",
			hdr{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 200},
		{"same-origin", "POST", "/sale?lock=lua", "127.0.0.1:8080",
			hdr{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8080"}, 200},
		{"typed in the address bar", "GET", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Sec-Fetch-Site": "none"}, 200},

		// Origin
		{"another origin", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "http://evil.example"}, 403},
		{"another port", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "http://127.0.0.1:9999"}, 403},
		{"another loopback name", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "http://localhost:8080"}, 403},
		{"null", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "null"}, 403},
		{"empty", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": ""}, 403},
		{"a path", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "http://127.0.0.1:8080/x"}, 403},
		{"the same origin", "POST", "/sale?lock=lua", "127.0.0.1:8080", hdr{"Origin": "http://127.0.0.1:8080"}, 200},
		{"the default port", "POST", "/sale?lock=lua", "localhost:80", hdr{"Origin": "http://localhost"}, 200},
		{"the default port, in neither", "POST", "/sale?lock=lua", "localhost", hdr{"Origin": "http://localhost"}, 200},
		{"the default port of https", "POST", "/sale?lock=lua", "localhost", hdr{"Origin": "https://localhost:443"}, 200},
		{"a Host without its port is on port 80", "POST", "/sale?lock=lua", "127.0.0.1", hdr{"Origin": "http://127.0.0.1:8080"}, 403},
		{"a Host without its port, another site", "POST", "/sale?lock=lua", "127.0.0.1", hdr{"Origin": "http://evil.example:8080"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.mr.Dump()
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Host = tc.host
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			e.router.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%s %s (Host %q, %v): %d %s, want %d", tc.method, tc.target, tc.host, tc.header, w.Code, w.Body, tc.want)
			}
			if tc.want < 400 {
				if tc.target == "/" && w.Header().Get("X-Frame-Options") != "DENY" {
					t.Errorf("the page may be framed: X-Frame-Options %q", w.Header().Get("X-Frame-Options"))
				}
				return
			}
			var body map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body["error"] == "" {
				t.Fatalf("body %s: want a JSON error (%v)", w.Body, err)
			}
			if want := map[int]string{403: "cross_site", 421: "host_not_allowed"}[tc.want]; body["reason"] != want {
				t.Errorf("reason %q, want %q", body["reason"], want)
			}
			if after := e.mr.Dump(); after != before {
				t.Errorf("a refused request changed Redis:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
