// Package httplimit is the request-header bounds of every HTTP server
// the lab runs (the app, the race port, the built-in load balancer; nginx
// is given the same in stack/lb/nginxconf.go): a client that sends its
// header slowly is cut after HeaderTimeout, and a header over a few KB
// is refused, so no stranger on the host can hold connections open or
// make a server buffer megabytes.
package httplimit

import (
	"net/http"
	"time"
)

const (
	// HeaderTimeout is how long a client has to send a whole header.
	HeaderTimeout = 5 * time.Second
	// MaxHeaderBytes is net/http's MaxHeaderBytes: it accepts 4096 bytes
	// more, so a header of up to 16 KB passes: room for the app's own
	// bound on a request target (8 KB, handlers.MaxURIBytes), which
	// answers a longer one with a JSON 414 where net/http would answer a
	// plain-text 431.
	MaxHeaderBytes = 12 << 10
	// Accepted is the largest header the lab's Go servers accept.
	Accepted = 16 << 10
	// LineBuffer is nginx's buffer for one header line or the request
	// line (large_client_header_buffers): a longer one is refused there
	// (414, or 400 for a header line).
	LineBuffer = 8 << 10
)

// Bound sets s's header limits and returns s.
func Bound(s *http.Server) *http.Server {
	s.ReadHeaderTimeout = HeaderTimeout
	s.MaxHeaderBytes = MaxHeaderBytes
	return s
}
