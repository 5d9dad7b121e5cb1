package lb

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/stack/proc"
)

// Directive is one nginx Directive; block is non-nil for "name args { ... }".
type Directive struct {
	Name  string
	Args  []string
	Block []*Directive
}

// ParseConf parses nginx configuration syntax: directives, blocks,
// comments and quoted strings. It knows no directive's meaning.
func ParseConf(src []byte) ([]*Directive, error) {
	toks, err := tokenize(string(src))
	if err != nil {
		return nil, err
	}
	p := &confParser{toks: toks}
	ds, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("nginx.conf: line %d: unexpected %q", p.toks[p.i].line, p.toks[p.i].s)
	}
	return ds, nil
}

type token struct {
	s      string
	quoted bool // a string literal: never a '{', '}' or ';'
	line   int
}

func tokenize(s string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == ';':
			toks = append(toks, token{s: string(c), line: line})
			i++
		case c == '"' || c == '\'':
			start := line
			var b strings.Builder
			i++
			for ; i < len(s) && s[i] != c; i++ {
				// As nginx does: \" \' and \\ lose the backslash, \n \t
				// and \r become the control character, other escapes (a
				// regex's \.) keep it.
				if s[i] == '\\' && i+1 < len(s) {
					if ctl, ok := controlEscapes[s[i+1]]; ok {
						b.WriteByte(ctl)
						i++
						continue
					}
					if strings.IndexByte("\"'\\", s[i+1]) >= 0 {
						i++
					}
				}
				if s[i] == '\n' {
					line++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("nginx.conf: line %d: unterminated string", start)
			}
			i++
			toks = append(toks, token{s: b.String(), quoted: true, line: start})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n;{}#\"'", rune(s[j])) {
				j++
			}
			toks = append(toks, token{s: s[i:j], line: line})
			i = j
		}
	}
	return toks, nil
}

// controlEscapes are the escapes nginx turns into a control character
// (quoteArg writes it back raw inside quotes, which nginx reads the same).
var controlEscapes = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r'}

type confParser struct {
	toks []token
	i    int
}

func (p *confParser) block(depth int) ([]*Directive, error) {
	var ds []*Directive
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		if !t.quoted && t.s == "}" {
			if depth == 0 {
				return nil, fmt.Errorf("nginx.conf: line %d: unexpected '}'", t.line)
			}
			return ds, nil
		}
		if !t.quoted && (t.s == "{" || t.s == ";") {
			return nil, fmt.Errorf("nginx.conf: line %d: unexpected %q", t.line, t.s)
		}
		d := &Directive{Name: t.s}
		p.i++
		for {
			if p.i >= len(p.toks) {
				return nil, fmt.Errorf("nginx.conf: line %d: %s: unexpected end of file", t.line, d.Name)
			}
			a := p.toks[p.i]
			p.i++
			if a.quoted || (a.s != ";" && a.s != "{" && a.s != "}") {
				d.Args = append(d.Args, a.s)
				continue
			}
			if a.s == "}" {
				return nil, fmt.Errorf("nginx.conf: line %d: %s: missing ';'", a.line, d.Name)
			}
			if a.s == "{" {
				body, err := p.block(depth + 1)
				if err != nil {
					return nil, err
				}
				if p.i >= len(p.toks) {
					return nil, fmt.Errorf("nginx.conf: line %d: %s: missing '}'", t.line, d.Name)
				}
				p.i++ // '}'
				if body == nil {
					body = []*Directive{}
				}
				d.Block = body
			}
			break
		}
		ds = append(ds, d)
	}
	if depth > 0 {
		return nil, errors.New("nginx.conf: missing '}' at end of file")
	}
	return ds, nil
}

// FormatConf writes directives back as nginx configuration.
func FormatConf(ds []*Directive) []byte {
	var b strings.Builder
	writeDirectives(&b, ds, 0)
	return []byte(b.String())
}

func writeDirectives(b *strings.Builder, ds []*Directive, depth int) {
	indent := strings.Repeat("    ", depth)
	for _, d := range ds {
		b.WriteString(indent)
		b.WriteString(d.Name)
		for _, a := range d.Args {
			b.WriteByte(' ')
			b.WriteString(quoteArg(a))
		}
		if d.Block == nil {
			b.WriteString(";\n")
			continue
		}
		b.WriteString(" {\n")
		writeDirectives(b, d.Block, depth+1)
		b.WriteString(indent + "}\n")
	}
}

func quoteArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\r\n;{}#\"'\\") {
		return a
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(a) + `"`
}

// Find returns the directives named name in ds (not recursive).
func Find(ds []*Directive, name string) []*Directive {
	var out []*Directive
	for _, d := range ds {
		if d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// drop removes the directives named in names from ds, recursively into
// blocks.
func drop(ds []*Directive, names ...string) []*Directive {
	out := ds[:0]
	for _, d := range ds {
		if slices.Contains(names, d.Name) {
			continue
		}
		if d.Block != nil {
			d.Block = drop(d.Block, names...)
		}
		out = append(out, d)
	}
	return out
}

// DeriveNginxConf turns the project's nginx.conf (written for
// docker-compose: upstream app1:8080.., listen 80) into one that runs on
// loopback from dir: the upstream's server lines become upstreams (with
// the first line's parameters kept), every listen becomes listen, and the
// process runs in the foreground with its pid, error log and temp files in
// dir and no access log. Nothing else changes, so the proxy behaviour under
// test (keepalive, proxy_next_upstream off, timeouts) is the docker one.
// Run the result as `nginx -p dir -c FILE`.
func DeriveNginxConf(src []byte, listen string, upstreams []string, dir string) ([]byte, error) {
	return deriveNginxConf(src, listen, upstreams, nil, "", dir, dir)
}

// raceLocation sends path (/race, /explore, /play) to the race server at addr:
// unbuffered, so each event of a race reaches the page at once, and read
// for as long as a race (or an exploration) may run.
func raceLocation(addr, path string) *Directive {
	d := func(name string, args ...string) *Directive { return &Directive{Name: name, Args: args} }
	return &Directive{Name: "location", Args: []string{"=", path}, Block: []*Directive{
		d("proxy_pass", "http://"+addr),
		d("proxy_http_version", "1.1"),
		d("proxy_set_header", "Connection", ""),
		d("proxy_set_header", "Host", "$http_host"), // as location / does
		d("proxy_buffering", "off"),
		// A body goes on as it comes: the race server reads a whole
		// request within httplimit.BodyTimeout.
		d("proxy_request_buffering", "off"),
		d("proxy_read_timeout", "330s"),
		// Both bounds: a location's limit_conn replaces the inherited.
		d("limit_conn", "perclient", strconv.Itoa(httplimit.PerClient)),
		d("limit_conn", "perclientrace", strconv.Itoa(httplimit.RacePerClient)),
	}}
}

// deriveNginxConf is DeriveNginxConf with upstream i marked down when
// down[i] (Stack.Drain takes an instance out of the load balancer so):
// nginx then sends it no new request, and a reload applies it without
// dropping a connection; when race is an address, /race and /explore
// sent there; and
// the temp files in temp.
func deriveNginxConf(src []byte, listen string, upstreams []string, down []bool, race, dir, temp string) ([]byte, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("stack: DeriveNginxConf: no upstreams")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("stack: DeriveNginxConf: %w", err)
	}
	if temp, err = filepath.Abs(temp); err != nil {
		return nil, fmt.Errorf("stack: DeriveNginxConf: %w", err)
	}
	workers, err := proc.ServerAccount()
	if err != nil {
		return nil, err
	}
	ds, err := ParseConf(src)
	if err != nil {
		return nil, fmt.Errorf("stack: DeriveNginxConf: %w", err)
	}
	https := Find(ds, "http")
	if len(https) != 1 {
		return nil, fmt.Errorf("stack: DeriveNginxConf: want one http block, found %d", len(https))
	}
	http := https[0]
	ups := Find(http.Block, "upstream")
	if len(ups) != 1 {
		return nil, fmt.Errorf("stack: DeriveNginxConf: want one upstream block, found %d", len(ups))
	}
	up := ups[0]
	servers := Find(up.Block, "server")
	if len(servers) == 0 || len(servers[0].Args) == 0 {
		return nil, fmt.Errorf("stack: DeriveNginxConf: upstream %v has no server", up.Args)
	}
	params := servers[0].Args[1:]
	var body []*Directive
	for i, u := range upstreams {
		args := append([]string{u}, params...)
		if i < len(down) && down[i] && !slices.Contains(params, "down") {
			args = append(args, "down")
		}
		body = append(body, &Directive{Name: "server", Args: args})
	}
	for _, d := range up.Block {
		if d.Name != "server" {
			body = append(body, d)
		}
	}
	up.Block = body

	// Logs into dir, temp files into temp; the source's user is dropped
	// (see the user line below; unprivileged nginx ignores user); the
	// source's bounds of clients too, to be the lab's (below, and the
	// race server's locations).
	http.Block = drop(http.Block, "access_log", "error_log",
		"client_header_timeout", "client_header_buffer_size", "large_client_header_buffers",
		"client_body_timeout", "lingering_time", "limit_conn_zone", "limit_conn", "limit_conn_status",
		"client_body_temp_path", "proxy_temp_path", "fastcgi_temp_path", "uwsgi_temp_path", "scgi_temp_path")

	listens := 0
	for _, srv := range Find(http.Block, "server") {
		for _, l := range Find(srv.Block, "listen") {
			if len(l.Args) == 0 {
				return nil, errors.New("stack: DeriveNginxConf: listen without an address")
			}
			l.Args[0] = listen
			listens++
		}
		if race != "" {
			srv.Block = append(srv.Block, raceLocation(race, "/race"), raceLocation(race, "/explore"), raceLocation(race, "/play"))
		}
	}
	if listens == 0 {
		return nil, errors.New("stack: DeriveNginxConf: no server block with a listen directive")
	}

	// nginx creates each temp dir (the last path element) itself.
	tempPath := func(kind string) string { return filepath.Join(temp, "nginx-"+kind+"-temp") }
	http.Block = append([]*Directive{
		{Name: "access_log", Args: []string{"off"}},
		// The header bounds of the lab's Go servers (internal/httplimit),
		// whatever the source says: a slow header is cut, a huge one
		// refused.
		{Name: "client_header_timeout", Args: []string{fmt.Sprintf("%ds", int(httplimit.HeaderTimeout/time.Second))}},
		{Name: "client_header_buffer_size", Args: []string{"1k"}},
		{Name: "large_client_header_buffers", Args: []string{"4", fmt.Sprintf("%dk", httplimit.LineBuffer>>10)}},
		// And of their bodies, and of one client address's connections:
		// a body sent slowly is cut, and no client starves the others.
		{Name: "client_body_timeout", Args: []string{fmt.Sprintf("%ds", int(httplimit.BodyTimeout/time.Second))}},
		{Name: "lingering_time", Args: []string{fmt.Sprintf("%ds", int(httplimit.BodyTimeout/time.Second))}},
		{Name: "limit_conn_zone", Args: []string{"$binary_remote_addr", "zone=perclient:4m"}},
		{Name: "limit_conn", Args: []string{"perclient", strconv.Itoa(httplimit.PerClient)}},
		{Name: "limit_conn_zone", Args: []string{"$binary_remote_addr", "zone=perclientrace:1m"}},
		{Name: "limit_conn_status", Args: []string{"503"}},
		{Name: "client_body_temp_path", Args: []string{tempPath("client-body")}},
		{Name: "proxy_temp_path", Args: []string{tempPath("proxy")}},
		{Name: "fastcgi_temp_path", Args: []string{tempPath("fastcgi")}},
		{Name: "uwsgi_temp_path", Args: []string{tempPath("uwsgi")}},
		{Name: "scgi_temp_path", Args: []string{tempPath("scgi")}},
	}, http.Block...)
	top := []*Directive{
		{Name: "daemon", Args: []string{"off"}},
		{Name: "pid", Args: []string{filepath.Join(dir, "nginx.pid")}},
		{Name: "error_log", Args: []string{filepath.Join(dir, "nginx-error.log"), "warn"}},
	}
	if workers != nil {
		// As root, the master stays root and its workers, which serve
		// the requests, run as proc.ServerUser, named here so that no
		// build's default decides. They write request bodies and
		// responses too large for their buffers to files under temp,
		// which that account must reach (a private parent, a 0700
		// t.TempDir or /root, gave every such request a 500): the
		// stack gives nginx a temp it can (proc.ServerDir).
		top = append(top, &Directive{Name: "user", Args: []string{workers.Name, workers.Group}})
	}
	for _, d := range ds {
		if !slices.Contains([]string{"daemon", "pid", "error_log", "user", "master_process"}, d.Name) {
			top = append(top, d)
		}
	}
	out := "# Derived by lockladder/stack from the project's nginx.conf for a loopback run.\n" +
		"# Regenerated on every start: edit nginx.conf instead.\n"
	return append([]byte(out), FormatConf(top)...), nil
}
