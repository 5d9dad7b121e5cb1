package lb

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/stack/proc"
)

const dockerConf = `# comment
user nginx;
worker_processes auto;
pid /var/run/nginx.pid;
events { worker_connections 1024; }
http {
    access_log /var/log/nginx/access.log;
    upstream app {
        server app1:8080 max_fails=0;
        server app2:8080 max_fails=0;
        keepalive 64;   # trailing comment
    }
    server {
        listen 80;
        location / {
            proxy_pass http://app;
            proxy_set_header Connection "";
            proxy_set_header X-Q 'a b;{c}';
            proxy_next_upstream off;
            access_log off;
        }
    }
}
`

func TestDeriveNginxConf(t *testing.T) {
	out, err := DeriveNginxConf([]byte(dockerConf), "127.0.0.1:9999",
		[]string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, "/run/x")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseConf(out)
	if err != nil {
		t.Fatalf("derived config does not parse: %v\n%s", err, out)
	}
	top := map[string][]string{}
	for _, d := range ds {
		top[d.Name] = d.Args
	}
	for name, want := range map[string]string{
		"daemon":    "off",
		"pid":       "/run/x/nginx.pid",
		"error_log": "/run/x/nginx-error.log warn",
	} {
		if got := strings.Join(top[name], " "); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// The source's user is dropped; as root the workers run as
	// proc.ServerUser, never root.
	a, err := proc.ServerAccount()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := top["user"]; a != nil && !slices.Equal(got, []string{a.Name, a.Group}) || a == nil && ok {
		t.Errorf("user %q (kept: %v), want the server account %+v", got, ok, a)
	}
	http := Find(ds, "http")[0]
	up := Find(http.Block, "upstream")[0]
	var servers []string
	for _, s := range Find(up.Block, "server") {
		servers = append(servers, strings.Join(s.Args, " "))
	}
	want := []string{"127.0.0.1:7001 max_fails=0", "127.0.0.1:7002 max_fails=0", "127.0.0.1:7003 max_fails=0"}
	if !slices.Equal(servers, want) {
		t.Errorf("upstream servers = %q, want %q", servers, want)
	}
	if len(Find(up.Block, "keepalive")) != 1 {
		t.Error("keepalive lost")
	}
	srv := Find(http.Block, "server")[0]
	if got := Find(srv.Block, "listen")[0].Args; !slices.Equal(got, []string{"127.0.0.1:9999"}) {
		t.Errorf("listen = %q", got)
	}
	loc := Find(srv.Block, "location")[0]
	if len(Find(loc.Block, "access_log")) != 0 {
		t.Error("a nested access_log survived")
	}
	if got := Find(http.Block, "access_log"); len(got) != 1 || got[0].Args[0] != "off" {
		t.Errorf("http access_log = %v", got)
	}
	for _, w := range []string{
		`proxy_set_header Connection "";`,
		`proxy_set_header X-Q "a b;{c}";`,
		"proxy_next_upstream off;",
		"proxy_temp_path /run/x/nginx-proxy-temp;",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("derived config lacks %q:\n%s", w, out)
		}
	}
}

func TestDeriveNginxConfErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no http", "events {}", "one http block"},
		{"no upstream", "http { server { listen 80; } }", "one upstream block"},
		{"empty upstream", "http { upstream a { keepalive 1; } server { listen 80; } }", "has no server"},
		{"no listen", "http { upstream a { server x:1; } server { } }", "no server block with a listen"},
		{"unbalanced", "http { upstream a { server x:1; }", "missing '}'"},
		{"missing semicolon", "http { upstream a { server x:1 } }", "missing ';'"},
		{"unterminated string", `http { x "y; }`, "unterminated string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DeriveNginxConf([]byte(tc.src), "127.0.0.1:1", []string{"127.0.0.1:2"}, "/tmp")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Quoted strings unescape as nginx reads them: \" \' \\ lose the
// backslash, \n \t \r become control characters, other escapes stay; and
// what formatNginx writes back reads the same.
func TestNginxQuotedEscapes(t *testing.T) {
	src := `x "a\nb\tc\rd\"e\\f\.g" 'h\'i';`
	want := []string{"a\nb\tc\rd\"e\\f\\.g", "h'i"}
	ds, err := ParseConf([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || !slices.Equal(ds[0].Args, want) {
		t.Fatalf("parsed %q, want %q", ds[0].Args, want)
	}
	again, err := ParseConf(FormatConf(ds))
	if err != nil {
		t.Fatalf("%v\n%s", err, FormatConf(ds))
	}
	if !slices.Equal(again[0].Args, want) {
		t.Errorf("round trip gives %q, want %q:\n%s", again[0].Args, want, FormatConf(ds))
	}
}

// nginx's own refusals in the project's nginx.conf (and so in the derived
// loopback one) answer a JSON object with an error, each from an internal
// location, with the status the client sees; the proxying is unchanged.
func TestNginxConfErrorsAreJSON(t *testing.T) {
	conf, err := DeriveNginxConf(readRepoFile(t, "nginx.conf"), "127.0.0.1:9999", []string{"127.0.0.1:7001"}, "/run/x")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseConf(conf)
	if err != nil {
		t.Fatal(err)
	}
	srv := Find(Find(ds, "http")[0].Block, "server")[0]
	pages := map[string]string{}
	for _, d := range Find(srv.Block, "error_page") {
		if len(d.Args) != 2 {
			t.Fatalf("error_page %q: want one code and a URI", d.Args)
		}
		pages[d.Args[0]] = d.Args[1]
	}
	locs := map[string]*Directive{}
	for _, l := range Find(srv.Block, "location") {
		switch {
		case len(l.Args) == 2 && l.Args[0] == "=":
			locs[l.Args[1]] = l
		case len(l.Args) == 1 && l.Args[0] == "/":
			for _, w := range [][]string{{"proxy_next_upstream", "off"}, {"proxy_pass", "http://app"}, {"proxy_request_buffering", "off"}} {
				if got := Find(l.Block, w[0]); len(got) != 1 || !slices.Equal(got[0].Args, w[1:]) {
					t.Errorf("location /: %s = %v, want %q", w[0], got, w[1:])
				}
			}
			if len(Find(l.Block, "proxy_intercept_errors")) != 0 {
				t.Error("location /: proxy_intercept_errors set: the apps' own errors must pass through")
			}
		}
	}
	// nginx's code -> what the client sees (494, a header too large, is
	// answered 400).
	for code, status := range map[string]string{"400": "400", "404": "404", "405": "405", "408": "408", "413": "413", "414": "414", "494": "400",
		"500": "500", "501": "501", "503": "503", "505": "505"} {
		t.Run(code, func(t *testing.T) {
			uri, ok := pages[code]
			if !ok {
				t.Fatalf("no error_page %s", code)
			}
			loc := locs[uri]
			if loc == nil {
				t.Fatalf("error_page %s %s: no location = %s", code, uri, uri)
			}
			if len(Find(loc.Block, "internal")) != 1 {
				t.Errorf("location %s is not internal", uri)
			}
			if dt := Find(loc.Block, "default_type"); len(dt) != 1 || !slices.Equal(dt[0].Args, []string{"application/json"}) {
				t.Errorf("location %s: default_type %v, want application/json", uri, dt)
			}
			ret := Find(loc.Block, "return")
			if len(ret) != 1 || len(ret[0].Args) != 2 || ret[0].Args[0] != status {
				t.Fatalf("location %s: return %v, want return %s BODY", uri, ret, status)
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(ret[0].Args[1]), &body); err != nil {
				t.Fatalf("location %s: body %q is not a JSON object: %v", uri, ret[0].Args[1], err)
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Errorf("location %s: body %q has no error", uri, ret[0].Args[1])
			}
			if reason, _ := body["reason"].(string); reason == "" {
				t.Errorf("location %s: body %q has no reason", uri, ret[0].Args[1])
			}
		})
	}
}

// Drain's nginx config marks only the drained upstream down, after the
// parameters the source gives every server.
func TestDeriveNginxConfDown(t *testing.T) {
	src := []byte(`events {}
http {
    upstream app { server app1:8080 max_fails=0; server app2:8080 max_fails=0; keepalive 8; }
    server { listen 80; location / { proxy_pass http://app; } }
}`)
	ups := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	out, err := deriveNginxConf(src, "127.0.0.1:9", ups, []bool{false, true, false}, "", t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseConf(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	servers := Find(Find(Find(ds, "http")[0].Block, "upstream")[0].Block, "server")
	want := [][]string{
		{"127.0.0.1:1", "max_fails=0"},
		{"127.0.0.1:2", "max_fails=0", "down"},
		{"127.0.0.1:3", "max_fails=0"},
	}
	if len(servers) != len(want) {
		t.Fatalf("%d servers, want %d:\n%s", len(servers), len(want), out)
	}
	for i, s := range servers {
		if !slices.Equal(s.Args, want[i]) {
			t.Errorf("server %d: %q, want %q", i, s.Args, want[i])
		}
	}
	plain, err := DeriveNginxConf(src, "127.0.0.1:9", ups, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tokensOf(t, plain), "down") {
		t.Errorf("DeriveNginxConf marks a server down:\n%s", plain)
	}
}

func tokensOf(t *testing.T, conf []byte) []string {
	t.Helper()
	toks, err := tokenize(string(conf))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tk := range toks {
		out = append(out, tk.s)
	}
	return out
}

// The derived config bounds what a slow client can hold, whatever the
// source says: its header and body time (httplimit), and the requests
// in flight per client address; to the race server (whose one client
// nginx is) a tighter bound besides.
func TestDeriveNginxConfBoundsClients(t *testing.T) {
	src := strings.Replace(dockerConf, "http {", "http {\n    client_body_timeout 60s;\n    limit_conn perclient 100000;", 1)
	out, err := deriveNginxConf([]byte(src), "127.0.0.1:9999", []string{"127.0.0.1:7001"}, nil, "127.0.0.1:7100", t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ParseConf(out)
	if err != nil {
		t.Fatal(err)
	}
	args := func(ds []*Directive, name string) []string {
		var got []string
		for _, d := range Find(ds, name) {
			got = append(got, strings.Join(d.Args, " "))
		}
		return got
	}
	http := Find(ds, "http")[0]
	for name, want := range map[string][]string{
		"client_header_timeout": {"5s"},
		"client_body_timeout":   {"10s"},
		"lingering_time":        {"10s"},
		"limit_conn_zone":       {"$binary_remote_addr zone=perclient:4m", "$binary_remote_addr zone=perclientrace:1m"},
		"limit_conn":            {"perclient " + strconv.Itoa(httplimit.PerClient)},
		"limit_conn_status":     {"503"},
	} {
		if got := args(http.Block, name); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	races := 0
	for _, loc := range Find(Find(http.Block, "server")[0].Block, "location") {
		if path := loc.Args[len(loc.Args)-1]; path == "/race" || path == "/explore" || path == "/play" {
			races++
			want := []string{"perclient " + strconv.Itoa(httplimit.PerClient), "perclientrace " + strconv.Itoa(httplimit.RacePerClient)}
			if got := args(loc.Block, "limit_conn"); !slices.Equal(got, want) {
				t.Errorf("location %s: limit_conn %q, want %q", path, got, want)
			}
		}
	}
	if races != 3 {
		t.Errorf("%d locations to the race server, want 3", races)
	}
}
