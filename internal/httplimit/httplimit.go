// Package httplimit is the request bounds of every HTTP server the lab
// runs (the app, the race port, the built-in load balancer; nginx is
// given the same in stack/lb/nginxconf.go): a client that sends its
// header slowly is cut after HeaderTimeout, its body after BodyTimeout,
// a header over a few KB is refused, and one client address holds at
// most PerClient connections (Listen), so no stranger on the host can
// hold connections open, starve the others or make a server buffer
// megabytes. Listen also answers net/http's own refusals (a malformed
// request, a header too large, an HTTP version not 1.x) as JSON with a
// reason, as every other answer of the lab is.
package httplimit

import (
	"net/http"
	"time"
)

const (
	// HeaderTimeout is how long a client has to send a whole header.
	HeaderTimeout = 5 * time.Second
	// BodyTimeout bounds a request's body: the Go servers read the whole
	// request, header and body, within it (http.Server.ReadTimeout);
	// nginx waits at most this long between two reads of a body
	// (client_body_timeout).
	BodyTimeout = 10 * time.Second
	// PerClient is the most connections one client address holds at
	// once at a server the lab's users reach (nginx's limit_conn, the
	// built-in load balancer's, the race port's): the bench's largest
	// -c (1,000) and room.
	PerClient = 1100
	// RacePerClient is the most requests one client address has in
	// flight to the race server (/race, /explore, /play) through nginx.
	// nginx is the race port's one client, so the port's own bound
	// (PerClient) counts every address's requests as nginx's: without
	// this one, a single address holding PerClient slow bodies there
	// would have the race port refuse everyone's race. A page runs one
	// race and a few explorations at a time.
	RacePerClient = 32
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

// Bound sets s's header limits, and its whole request's (BodyTimeout)
// unless s has a ReadTimeout already, and returns s. A handler that
// streams past BodyTimeout (a race) clears its read deadline once it has
// what it reads (http.ResponseController.SetReadDeadline): past the
// deadline net/http ends the request's context.
func Bound(s *http.Server) *http.Server {
	s.ReadHeaderTimeout = HeaderTimeout
	s.MaxHeaderBytes = MaxHeaderBytes
	if s.ReadTimeout == 0 {
		s.ReadTimeout = BodyTimeout
	}
	return s
}
