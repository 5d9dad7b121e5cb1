// Package origin tells a browser's request from another site, or for a
// host that is not the lab's, from the lab's own (its page, curl, ab,
// the bench). The lab sells on a plain GET or a POST without a body:
// requests any page on any site can have a visitor's browser send to it
// (a link, an image, a form, fetch in no-cors mode). A browser says where
// such a request comes from (Sec-Fetch-Site, Origin), and which host it
// asked for (Host). Check refuses:
//
//   - a Host the lab does not serve (421): DNS rebinding, a name of an
//     attacker's that resolves to 127.0.0.1, makes the attacker's page
//     and the lab one origin to the browser, and only the Host tells;
//   - a request another site sent (403): Sec-Fetch-Site cross-site or
//     same-site (another port of this host is the same site, not the
//     same origin), or an Origin that is not the Host, or, from a
//     browser that sends neither, a Referer of another site's page.
//
// Clients that are not browsers (curl, ab, vegeta, the bench) send
// neither Sec-Fetch-Site, Origin nor Referer, and name the host they
// dial. The
// app's instances and the stack's race service both check with it.
package origin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/lockladder/lockladder/contract"
)

// Check says why r is refused: its status (421 or 403), reason and
// message; status 0 when it is the lab's.
func (l Hosts) Check(r *http.Request) (status int, reason, msg string) {
	if !l.Allow(r.Host) {
		return http.StatusMisdirectedRequest, contract.ReasonHostNotAllowed,
			fmt.Sprintf("host %q is not this lab's: it serves %s (a name of someone else's that resolves here is DNS rebinding)",
				truncate(r.Host, 64), l)
	}
	if why := CrossSite(r); why != "" {
		return http.StatusForbidden, contract.ReasonCrossSite, why + ": the lab changes nothing for another site's page"
	}
	return 0, "", ""
}

// CrossSite says why r comes from another site than the one it is sent
// to, "" when it does not (or cannot tell: no browser sent it).
func CrossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		// A link from elsewhere to the page opens it: the page changes
		// nothing, and its own requests are same-origin. Framed
		// (Sec-Fetch-Dest: iframe), it is refused like any other.
		if r.Method == http.MethodGet && r.URL.Path == "/" &&
			r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document" {
			break
		}
		return "Sec-Fetch-Site: " + site
	}
	origins, sent := r.Header["Origin"]
	if !sent {
		// An older browser, or a proxy that strips the rest, may send
		// only the page it came from: another site's is refused alike.
		if refs, ok := r.Header["Referer"]; ok && r.Header.Get("Sec-Fetch-Site") == "" &&
			(len(refs) != 1 || !sameHost(pageOrigin(refs[0]), r.Host)) {
			return fmt.Sprintf("Referer %q is not this lab's page (Host %q)", truncate(strings.Join(refs, ", "), 64), truncate(r.Host, 64))
		}
		return ""
	}
	if len(origins) != 1 || !sameHost(origins[0], r.Host) {
		return fmt.Sprintf("Origin %q is not this lab's (Host %q)", truncate(strings.Join(origins, ", "), 64), truncate(r.Host, 64))
	}
	return ""
}

// pageOrigin is the origin (scheme://host[:port]) of a page's URL, ""
// when it has none.
func pageOrigin(page string) string {
	u, err := url.Parse(page)
	if err != nil || u.Host == "" || u.User != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// sameHost reports whether origin (scheme://host[:port]) names host (a
// Host header), port included: a browser names a port other than its
// scheme's in both, and the load balancer passes the Host on as sent
// (nginx.conf: $http_host). A browser also tells another port of the
// same host apart itself (Sec-Fetch-Site: same-site).
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return false // "null" (a sandboxed frame, a file) too
	}
	def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	oname, oport := splitHost(u.Host)
	if oport == "" {
		oport = def
	}
	name, port := splitHost(host)
	if port == "" {
		port = def
	}
	return name == oname && port == oport
}

// Hosts is what a request's Host may name: loopback (localhost,
// 127.0.0.0/8, ::1) and the names given, each on any port.
type Hosts []string

// NewHosts allows the host of addr (the listen address; none when it
// listens on every interface or on loopback) and names besides loopback.
func NewHosts(addr string, names []string) Hosts {
	var l Hosts
	if name, _ := splitHost(addr); name != "" && !loopback(name) {
		if ip, err := netip.ParseAddr(name); err != nil || !ip.IsUnspecified() {
			l = append(l, name)
		}
	}
	for _, n := range names {
		if n, _ := splitHost(n); n != "" && !loopback(n) && !slices.Contains(l, n) {
			l = append(l, n)
		}
	}
	return l
}

// Allow reports whether a request for host (its Host header) is the
// lab's. No Host at all (HTTP/1.0) is allowed: no browser sends that.
func (l Hosts) Allow(host string) bool {
	if host == "" {
		return true
	}
	name, _ := splitHost(host)
	return loopback(name) || slices.Contains(l, name)
}

func (l Hosts) String() string {
	return strings.Join(append([]string{"localhost", "127.0.0.0/8", "[::1]"}, l...), ", ") + ", on any port"
}

// loopback reports whether name is a loopback name or address: the
// browser resolves it to this machine itself, no DNS can rebind it.
func loopback(name string) bool {
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.Unmap().IsLoopback()
}

// splitHost splits a Host (name, name:port, [v6]:port, or a bare v6
// address) into its name, lower case, without brackets or a final dot,
// and its port ("" when none).
func splitHost(hostport string) (name, port string) {
	name = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		name, port = h, p
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		name = hostport[1 : len(hostport)-1]
	}
	return strings.TrimSuffix(strings.ToLower(name), "."), port
}

// ParseHosts reads a comma-separated list of host names (the app's
// -hosts, ALLOWED_HOSTS): the names a request's Host may give besides
// loopback's and the listen address's (Config.Hosts), such as the
// service names a compose deployment reaches the app by (nginx, app1).
// A name has no port (it is allowed on any), no scheme and no path.
func ParseHosts(list string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if err := checkHostName(n); err != nil {
			return nil, fmt.Errorf("host %q: %w", truncate(n, 64), err)
		}
		name, _ := splitHost(n)
		names = append(names, name)
	}
	return names, nil
}

func checkHostName(n string) error {
	if strings.Contains(n, "://") || strings.ContainsAny(n, "/?#@ \t") {
		return errors.New("give a host name alone, e.g. nginx (no scheme, path or user)")
	}
	if _, err := netip.ParseAddr(strings.Trim(n, "[]")); err == nil {
		return nil // an address; a bare v6 one has colons
	}
	if _, port, err := net.SplitHostPort(n); err == nil {
		if _, err := strconv.Atoi(port); err == nil {
			return errors.New("no port: a name is allowed on any port")
		}
	}
	if strings.ContainsAny(n, ":[]") {
		return errors.New("not a host name")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
