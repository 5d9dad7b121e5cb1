package e2e

import (
	"bytes"
	"net/http"
	"strings"
)

// badRow is one malformed request, sent as is through the load balancer
// and straight to one instance.
type badRow struct {
	name    string
	method  string
	target  string // request target (path and raw query), written verbatim
	body    []byte
	chunked bool              // send body without a Content-Length
	header  map[string]string // extra request headers; "Host" replaces the one dialled ("": none), ":proto" HTTP/1.1
	param   string            // the parameter the 400 must name, if any
	reason  string            // the "reason" the answer must give, if any
	lb      int               // status wanted through the load balancer; 0: not sent there
	direct  int               // status wanted from the instance; 0: not sent there
	allow   string            // for a 405: the methods Allow must list
	// Behind the built-in Go proxy (no nginx on PATH, never under
	// CI=true): the status wanted there when it differs from lb, or why
	// the row cannot pass there.
	builtin     int
	builtinSkip string
}

// both is a row wanting the same status both ways.
func both(name, method, target string, code int) badRow {
	return badRow{name: name, method: method, target: target, lb: code, direct: code}
}

// bad400 is a GET of target refused 400 both ways.
func bad400(name, target string) badRow {
	return both(name, http.MethodGet, target, http.StatusBadRequest)
}

// badNumber is a request whose number param is not written the one way
// the lab takes (internal/number): a 400 naming it, both ways.
func badNumber(method, target, param string) badRow {
	r := both(param+" "+strings.SplitN(target, "?", 2)[1], method, target, http.StatusBadRequest)
	r.param, r.reason = param, "bad_request"
	return r
}

// raceNumber is badNumber of a race's parameter: the race server's,
// through the load balancer only.
func raceNumber(target, param string) badRow {
	r := badNumber(http.MethodPost, target, param)
	r.direct = 0
	return r
}

// notHTTP is a request net/http or nginx refuses before any handler:
// code both ways, as JSON with reason.
func notHTTP(name, method, target string, header map[string]string, code int, reason string) badRow {
	r := both(name, method, target, code)
	r.header, r.reason = header, reason
	return r
}

// nginxOnly skips a row whose load-balancer answer is nginx's own:
// behind the built-in proxy the app's net/http answers a 30 KiB query with
// a plain-text 431, and takes a 10 KiB header.
const nginxOnly = "nginx's own refusal"

// crossSite is a request a page of another site had a browser send:
// refused 403 both ways.
func crossSite(name, method, target string, header map[string]string) badRow {
	r := both(name, method, target, http.StatusForbidden)
	r.header, r.reason = header, "cross_site"
	return r
}

// notOurHost is a request for a Host the lab does not serve: refused 421
// both ways (the load balancer passes the Host on).
func notOurHost(name, method, target, host string) badRow {
	r := both(name, method, target, http.StatusMisdirectedRequest)
	r.header, r.reason = map[string]string{"Host": host}, "host_not_allowed"
	return r
}

// noItem is a request for an item /reset never made: a 404
// no_such_item both ways, and (as for every row) nothing created: no
// lock key, no token counter, no counter of the item.
func noItem(name, method, target string) badRow {
	r := both(name, method, target, http.StatusNotFound)
	r.reason = "no_such_item"
	return r
}

func wrongMethod(method, target, allow string) badRow {
	r := both(method+" "+strings.SplitN(target, "?", 2)[0], method, target, http.StatusMethodNotAllowed)
	r.allow = allow
	return r
}

func withBody(name, method, target string, n int, chunked bool) badRow {
	r := both(name, method, target, http.StatusRequestEntityTooLarge)
	r.body, r.chunked = bytes.Repeat([]byte("b"), n), chunked
	return r
}

// badInputRows is the table: every parameter (lock, reenter, wait, the
// fault parameters, stock, since, limit) missing, empty, zero, negative,
// fractional, non-numeric, huge, over the limit, with odd characters,
// repeated, next to unknown parameters; items /reset never made (state
// growth); wrong methods; oversized bodies, targets and headers; unknown
// paths. Where a value is valid it is not
// here: a missing reenter or wait (the default), reenter=0 (no), stock=0
// (an empty shop), since missing or 0 (everything kept).
func badInputRows() []badRow {
	const huge = "99999999999999999999"
	long := func(n int) string { return strings.Repeat("x", n) }
	rows := []badRow{
		// lock
		bad400("lock missing", "/sale"),
		both("lock missing, POST /testLock", http.MethodPost, "/testLock", 400),
		bad400("lock empty", "/sale?lock="),
		bad400("lock zero", "/sale?lock=0"),
		bad400("lock negative", "/sale?lock=-1"),
		bad400("lock fractional", "/sale?lock=1.5"),
		bad400("lock huge", "/sale?lock="+huge),
		bad400("lock unknown", "/sale?lock=nope"),
		both("lock unknown, POST /testLock", http.MethodPost, "/testLock?lock=mutex", 400),
		bad400("lock wrong case", "/sale?lock=LUA"),
		bad400("lock with a space", "/sale?lock=lua%20"),
		bad400("lock with a plus", "/sale?lock=lua+"),
		bad400("lock NUL", "/sale?lock=%00"),
		bad400("lock name then NUL", "/sale?lock=lua%00"),
		bad400("lock ../", "/sale?lock=../"),
		bad400("lock path traversal encoded", "/sale?lock=..%2F..%2Fetc%2Fpasswd"),
		bad400("lock <script> raw", "/sale?lock=<script>alert(1)</script>"),
		bad400("lock <script> encoded", "/sale?lock=%3Cscript%3Ealert(1)%3C%2Fscript%3E"),
		bad400("lock quote and backslash", "/sale?lock=%22%5C"),
		bad400("lock CRLF encoded", "/sale?lock=lua%0D%0ASet-Cookie:x=1"),
		bad400("lock unicode encoded", "/sale?lock=%F0%9F%94%92"),
		bad400("lock unicode raw", "/sale?lock=l\u00fca"),
		bad400("lock invalid UTF-8", "/sale?lock=%FF%FE"),
		bad400("lock 1000 chars", "/sale?lock="+long(1000)),
		bad400("lock 7000 chars", "/sale?lock="+long(7000)),
		bad400("lock repeated, same", "/sale?lock=lua&lock=lua"),
		bad400("lock repeated, different", "/sale?lock=lua&lock=atomic"),
		bad400("lock with an unknown parameter", "/sale?lock=lua&x=1"),
		bad400("lock with stock=", "/testLock?lock=lua&stock=5"),
		bad400("parameter name in another case", "/sale?Lock=lua"),
		bad400("empty parameter name", "/sale?lock=lua&=1"),
		bad400("bad escape in a second pair", "/sale?lock=lua&%zz=1"),
		bad400("bad escape in the value", "/sale?lock=lua%zz"),
		bad400("semicolon separator", "/sale?lock=lua;x=1"),
		bad400("semicolon in a second pair", "/sale?lock=lua&x;y=1"),

		// reenter (0, false: valid)
		bad400("reenter empty", "/sale?lock=lua&reenter="),
		bad400("reenter negative", "/sale?lock=lua&reenter=-1"),
		bad400("reenter two", "/sale?lock=lua&reenter=2"),
		bad400("reenter fractional", "/sale?lock=lua&reenter=1.5"),
		bad400("reenter non-numeric", "/testLock?lock=lua&reenter=yes"),
		bad400("reenter huge", "/sale?lock=lua&reenter="+huge),
		bad400("reenter NUL", "/sale?lock=lua&reenter=%00"),
		bad400("reenter repeated", "/sale?lock=reentrant&reenter=1&reenter=1"),

		// wait
		bad400("wait empty", "/sale?lock=lua&wait="),
		bad400("wait zero", "/sale?lock=lua&wait=0"),
		bad400("wait negative", "/sale?lock=lua&wait=-1"),
		bad400("wait fractional", "/sale?lock=lua&wait=1.5"),
		bad400("wait non-numeric", "/testLock?lock=lua&wait=spin"),
		bad400("wait wrong case", "/sale?lock=lua&wait=NOTIFY"),
		bad400("wait a duration", "/sale?lock=lua&wait=10ms"),
		bad400("wait huge", "/sale?lock=lua&wait="+huge),
		bad400("wait unicode", "/sale?lock=lua&wait=%E2%8F%B3"),
		bad400("wait repeated", "/sale?lock=lua&wait=fixed&wait=notify"),
		bad400("wait=relay on a polling lock", "/sale?lock=lua&wait=relay"),
		bad400("wait on a lock that never waits", "/sale?lock=atomic&wait=fixed"),
		bad400("wait on fair, which waits for its handoff", "/testLock?lock=fair&wait=notify"),

		// holding: one request may not keep a lock long. reenter=1 only on
		// a lock that re-enters (any other would hold it waiting for
		// itself); try= (0 to 5s) and lease= (100ms to 5s).
		bad400("reenter on setnx, waiting 10s", "/sale?lock=setnx&reenter=1&try=10s"),
		bad400("reenter on setnx", "/sale?lock=setnx&reenter=1"),
		bad400("reenter on lua", "/testLock?lock=lua&reenter=1"),
		bad400("reenter on fenced", "/sale?lock=fenced&reenter=true"),
		bad400("reenter on atomic", "/sale?lock=atomic&reenter=1"),
		bad400("try negative", "/sale?lock=lua&try=-1s"),
		bad400("try over 5s", "/sale?lock=lua&try=6s"),
		bad400("try of 10s", "/sale?lock=reentrant&try=10s"),
		bad400("try of an hour", "/sale?lock=lua&try=1h"),
		bad400("try without a unit", "/sale?lock=lua&try=5"),
		bad400("try empty", "/sale?lock=lua&try="),
		bad400("try repeated", "/sale?lock=lua&try=0&try=1s"),
		bad400("try on a lock that never waits", "/sale?lock=atomic&try=1s"),
		bad400("lease under 100ms", "/sale?lock=lua&lease=50ms"),
		bad400("lease over 5s", "/sale?lock=lua&lease=6s"),
		bad400("lease of a minute", "/sale?lock=fair&lease=60s"),
		bad400("lease zero", "/sale?lock=lua&lease=0s"),
		bad400("lease non-numeric", "/testLock?lock=lua&lease=long"),
		bad400("lease on a lock without a lease", "/sale?lock=setnx&lease=1s"),
		bad400("lease on local", "/sale?lock=local&lease=1s"),

		// fault parameters: faults are off on these instances
		bad400("work on a faultless instance", "/sale?lock=lua&work=10ms"),
		bad400("fault=crash on a faultless instance", "/sale?lock=setnx&fault=crash"),
		bad400("pause on a faultless instance", "/sale?lock=lua&fault=pause&pause=1s"),
		bad400("pause alone", "/testLock?lock=lua&pause=1s"),
		bad400("work empty", "/sale?lock=lua&work="),
		bad400("work zero", "/sale?lock=lua&work=0"),
		bad400("work negative", "/sale?lock=lua&work=-1s"),
		bad400("work huge", "/sale?lock=lua&work="+huge+"h"),
		bad400("fault unknown", "/sale?lock=lua&fault=meltdown"),
		bad400("fault without a lock", "/sale?fault=crash"),

		// stock (POST /reset; 0 is valid)
		both("stock missing", http.MethodPost, "/reset", 400),
		both("stock empty", http.MethodPost, "/reset?stock=", 400),
		both("stock negative", http.MethodPost, "/reset?stock=-1", 400),
		both("stock fractional", http.MethodPost, "/reset?stock=1.5", 400),
		both("stock non-numeric", http.MethodPost, "/reset?stock=abc", 400),
		both("stock exponent", http.MethodPost, "/reset?stock=1e3", 400),
		both("stock hex", http.MethodPost, "/reset?stock=0x10", 400),
		both("stock underscores", http.MethodPost, "/reset?stock=1_000", 400),
		both("stock leading space", http.MethodPost, "/reset?stock=%205", 400),
		both("stock NUL", http.MethodPost, "/reset?stock=5%00", 400),
		both("stock huge", http.MethodPost, "/reset?stock="+huge, 400),
		both("stock over the limit", http.MethodPost, "/reset?stock=1000001", 400),
		both("stock repeated", http.MethodPost, "/reset?stock=5&stock=5", 400),
		both("stock with an unknown parameter", http.MethodPost, "/reset?stock=5&x=1", 400),
		both("stock with lock=", http.MethodPost, "/reset?stock=5&lock=lua", 400),
		both("stock bad escape", http.MethodPost, "/reset?stock=5&%zz", 400),

		// since (GET /sections; missing and 0 are valid)
		bad400("since empty", "/sections?since="),
		bad400("since negative", "/sections?since=-1"),
		bad400("since fractional", "/sections?since=1.5"),
		bad400("since non-numeric", "/sections?since=yesterday"),
		bad400("since huge", "/sections?since="+huge),
		bad400("since over int64", "/sections?since=9223372036854775808"),
		bad400("since repeated", "/sections?since=1&since=2"),
		bad400("since with an unknown parameter", "/sections?since=1&x=1"),
		// limit (GET /sections; 1 to 10000, default 10000)
		bad400("limit zero", "/sections?limit=0"),
		bad400("limit negative", "/sections?since=0&limit=-1"),
		bad400("limit empty", "/sections?limit="),
		bad400("limit over 10000", "/sections?limit=10001"),
		bad400("limit huge", "/sections?limit="+huge),
		bad400("limit non-numeric", "/sections?limit=all"),
		bad400("limit repeated", "/sections?limit=1&limit=2"),

		// GET /stock takes no parameter
		bad400("stock read with a parameter", "/stock?x=1"),
		bad400("stock read with stock=", "/stock?stock=5"),

		// state growth: a sku= /reset never made (here none was: the
		// setup resets the lab's item only) creates nothing under any
		// lock, or every new ID would leave keys behind
		noItem("unknown item, sale under lua", http.MethodPost, "/sale?lock=lua&sku=nope"),
		noItem("unknown item, sale under none", http.MethodPost, "/sale?lock=none&sku=1"),
		noItem("unknown item, sale under local", http.MethodGet, "/sale?lock=local&sku=2"),
		noItem("unknown item, sale under setnx", http.MethodPost, "/sale?lock=setnx&sku=x-1"),
		noItem("unknown item, sale under reentrant, re-entering", http.MethodPost, "/sale?lock=reentrant&sku=x_2&reenter=1"),
		noItem("unknown item, sale under redlock", http.MethodPost, "/sale?lock=redlock&sku=3"),
		noItem("unknown item, sale under fenced", http.MethodPost, "/sale?lock=fenced&sku=4"),
		noItem("unknown item, sale under fair, try=0", http.MethodPost, "/sale?lock=fair&sku=5&try=0s"),
		noItem("unknown item, sale under cohort", http.MethodPost, "/sale?lock=cohort&sku=6"),
		noItem("unknown item, sale under cohort-carry", http.MethodPost, "/sale?lock=cohort-carry&sku=7"),
		noItem("unknown item, sale under redsync", http.MethodPost, "/sale?lock=redsync&sku=8"),
		noItem("unknown item, sale under redislock", http.MethodPost, "/sale?lock=redislock&sku=9"),
		noItem("unknown item, sale under atomic", http.MethodPost, "/sale?lock=atomic&sku=10"),
		noItem("unknown item, increment under none", http.MethodGet, "/testLock?lock=none&sku=11"),
		noItem("unknown item, increment under fenced", http.MethodPost, "/testLock?lock=fenced&sku=12"),
		noItem("unknown item, increment under cohort-carry", http.MethodPost, "/testLock?lock=cohort-carry&sku=13"),
		noItem("unknown item, increment under atomic", http.MethodGet, "/testLock?lock=atomic&sku=14"),
		noItem("unknown item, 40 characters", http.MethodPost, "/sale?lock=lua&sku="+long(40)),
		noItem("unknown item, read", http.MethodGet, "/stock?sku=nope"),
		noItem("unknown item, read in a lock's store", http.MethodGet, "/stock?lock=fenced&sku=nope"),
		// still a 400 first: the request is bad before the item is looked up
		bad400("unknown item with an unknown lock", "/sale?lock=nope&sku=nope"),
		bad400("unknown item with a bad wait", "/sale?lock=lua&sku=nope&wait=spin"),

		// wrong methods
		wrongMethod(http.MethodPut, "/sale?lock=lua", "GET, POST"),
		wrongMethod(http.MethodDelete, "/sale?lock=lua", "GET, POST"),
		wrongMethod(http.MethodPatch, "/sale?lock=lua", "GET, POST"),
		wrongMethod(http.MethodOptions, "/sale?lock=lua", "GET, POST"),
		wrongMethod("BREW", "/sale?lock=lua", "GET, POST"),
		wrongMethod(http.MethodPut, "/testLock?lock=atomic", "GET, POST"),
		wrongMethod(http.MethodDelete, "/testLock?lock=atomic", "GET, POST"),
		wrongMethod(http.MethodGet, "/reset?stock=5", "POST"),
		wrongMethod(http.MethodPut, "/reset?stock=5", "POST"),
		wrongMethod(http.MethodDelete, "/reset", "POST"),
		wrongMethod(http.MethodPost, "/stock", "GET"),
		wrongMethod(http.MethodDelete, "/stock", "GET"),
		wrongMethod(http.MethodPost, "/healthz", "GET"),
		wrongMethod(http.MethodPost, "/sections?since=0", "GET"),
		wrongMethod(http.MethodPut, "/strategies", "GET"),
		wrongMethod(http.MethodPost, "/", "GET"),

		// oversized bodies: no endpoint takes one. Under nginx's
		// client_max_body_size (1m) nginx passes it on and the app refuses
		// it; over, nginx refuses it itself.
		withBody("1 MiB body on POST /sale", http.MethodPost, "/sale?lock=lua", 1<<20, false),
		withBody("1 MiB chunked body on POST /sale", http.MethodPost, "/sale?lock=lua", 1<<20, true),
		withBody("100 KiB body on GET /sale", http.MethodGet, "/sale?lock=atomic", 100<<10, false),
		withBody("100 KiB chunked body on POST /testLock", http.MethodPost, "/testLock?lock=atomic", 100<<10, true),
		withBody("100 KiB body on POST /reset", http.MethodPost, "/reset?stock=5", 100<<10, false),
		withBody("100 KiB body on GET /stock", http.MethodGet, "/stock", 100<<10, false),
		withBody("100 KiB body on PUT /sale", http.MethodPut, "/sale?lock=lua", 100<<10, false),
		withBody("2 MiB body on POST /sale", http.MethodPost, "/sale?lock=lua", 2<<20, false),
		withBody("2 MiB chunked body on POST /sale", http.MethodPost, "/sale?lock=lua", 2<<20, true),

		// oversized targets: over the app's 8 KiB and nginx's 8k line
		both("10 KiB query on /sale", http.MethodGet, "/sale?lock=lua&pad="+long(10<<10), 414),
		both("10 KiB lock name", http.MethodPost, "/sale?lock="+long(10<<10), 414),
		both("10 KiB stock", http.MethodPost, "/reset?stock="+strings.Repeat("9", 10<<10), 414),
		both("10 KiB since", http.MethodGet, "/sections?since="+strings.Repeat("1", 10<<10), 414),
		both("10 KiB path", http.MethodGet, "/"+long(10<<10), 414),
		// Past the app's MaxHeaderBytes (16 KiB) net/http answers a
		// plain-text 431 before the router: only nginx's answer is checked.
		{name: "30 KiB query through nginx", method: http.MethodGet, target: "/sale?lock=lua&pad=" + long(30<<10),
			lb: 414, builtinSkip: nginxOnly},
		// A header line over nginx's 8k buffer: nginx refuses it (494,
		// answered 400); the app would take it (under 16 KiB) and sell.
		{name: "10 KiB header through nginx", method: http.MethodGet, target: "/sale?lock=lua",
			header: map[string]string{"X-Pad": long(10 << 10)}, lb: 400, builtinSkip: nginxOnly},
		{name: "10 KiB cookie through nginx", method: http.MethodPost, target: "/testLock?lock=atomic",
			header: map[string]string{"Cookie": "c=" + long(10<<10)}, lb: 400, builtinSkip: nginxOnly},

		// from another site: a browser says so (Sec-Fetch-Site, Origin),
		// and the lab changes nothing for it (403 cross_site)
		crossSite("cross-site sale", http.MethodPost, "/sale?lock=lua", map[string]string{"Sec-Fetch-Site": "cross-site"}),
		crossSite("same-site increment", http.MethodGet, "/testLock?lock=atomic", map[string]string{"Sec-Fetch-Site": "same-site"}),
		crossSite("cross-site reset", http.MethodPost, "/reset?stock=5", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}),
		crossSite("cross-site link to a sale", http.MethodGet, "/sale?lock=atomic",
			map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}),
		crossSite("another site's Origin", http.MethodPost, "/sale?lock=atomic", map[string]string{"Origin": "http://evil.example"}),
		crossSite("Origin null", http.MethodPost, "/testLock?lock=lua", map[string]string{"Origin": "null"}),
		crossSite("Origin of another loopback name", http.MethodPost, "/sale?lock=lua", map[string]string{"Origin": "http://localhost"}),
		// the load balancer passes the Host on, port and all: an Origin
		// of another port of the same host is another site's
		crossSite("Origin of another port", http.MethodPost, "/sale?lock=lua", map[string]string{"Origin": "http://127.0.0.1:1"}),
		// a Host not the lab's: DNS rebinding (421 host_not_allowed)
		notOurHost("rebinding name", http.MethodPost, "/sale?lock=lua", "evil.example"),
		notOurHost("rebinding name with the port", http.MethodPost, "/reset?stock=5", "evil.example:8080"),
		notOurHost("name under localhost's", http.MethodGet, "/testLock?lock=atomic", "localhost.evil.example"),
		notOurHost("every interface", http.MethodPost, "/sale?lock=atomic", "0.0.0.0:8080"),
		notOurHost("rebinding the page", http.MethodGet, "/", "evil.example"),

		// Referer alone (an older browser, a proxy that strips the rest)
		crossSite("only another site's Referer", http.MethodGet, "/sale?lock=atomic", map[string]string{"Referer": "http://evil.example"}),
		crossSite("only another port's Referer", http.MethodPost, "/testLock?lock=lua", map[string]string{"Referer": "http://127.0.0.1:1/page"}),

		// numbers: one way to write each (internal/number), no sign, no
		// leading zero, not empty; the 400 names the parameter
		badNumber(http.MethodGet, "/sale?lock=lua&try=-0", "try"),
		badNumber(http.MethodPost, "/testLock?lock=lua&try=%2B1s", "try"),
		badNumber(http.MethodPost, "/reset?stock=%2B1", "stock"),
		badNumber(http.MethodPost, "/reset?stock=+1", "stock"),
		badNumber(http.MethodPost, "/reset?stock=-0", "stock"),
		badNumber(http.MethodPost, "/reset?stock=0000000000000000000001", "stock"),
		badNumber(http.MethodPost, "/reset?stock=5&skus=%2B1", "skus"),
		badNumber(http.MethodGet, "/sections?since=-0", "since"),
		raceNumber("/race?lock=lua&endpoint=sale&n=%2B1", "n"),
		raceNumber("/race?lock=lua&endpoint=sale&n=0000000001", "n"),
		raceNumber("/race?lock=lua&endpoint=sale&c=%2B1", "c"),
		raceNumber("/race?lock=lua&endpoint=sale&n=", "n"),

		// refused before any handler, by nginx or net/http: JSON all the same
		notHTTP("HTTP/2.0 request line", http.MethodGet, "/sale?lock=lua", map[string]string{":proto": "HTTP/2.0"}, 505, "http_version"),
		notHTTP("HTTP/3.1 request line", http.MethodGet, "/stock", map[string]string{":proto": "HTTP/3.1"}, 505, "http_version"),
		notHTTP("an unknown transfer coding", http.MethodGet, "/stock", map[string]string{"Transfer-Encoding": "gzip"}, 501, "not_implemented"),
		notHTTP("no Host", http.MethodGet, "/sale?lock=lua", map[string]string{"Host": ""}, 400, "bad_request"),
		{name: "TRACE through nginx", method: "TRACE", target: "/sale?lock=lua", lb: 405, reason: "method_not_allowed", builtinSkip: nginxOnly},
		{name: "TRACE", method: "TRACE", target: "/sale?lock=lua", direct: 405, reason: "method_not_allowed", allow: "GET, POST"},

		// the run guard: nothing taken, renewed or released without the
		// stack's run key (its Redis password), whatever name or token
		both("guard take without the run key", http.MethodPost, "/guard?run=bench", 403),
		both("guard take under a name of the caller's", http.MethodPost, "/guard?owner=x", 403),
		both("guard renewal without the run key", http.MethodPut, "/guard?owner=a", 403),
		both("guard release without the run key", http.MethodDelete, "/guard", 403),

		// unknown paths
		both("unknown path", http.MethodGet, "/nowhere", 404),
		both("unknown path, POST", http.MethodPost, "/buy?lock=lua", 404),
		both("path in another case", http.MethodGet, "/SALE?lock=lua", 404),
		both("trailing slash", http.MethodGet, "/sale/?lock=lua", 404),
		both("trailing slash, POST", http.MethodPost, "/testLock/?lock=lua", 404),
		both("sub-path", http.MethodPost, "/sale/1?lock=lua", 404),
		both("double slash", http.MethodGet, "//sale?lock=lua", 404),
		both("dot segment", http.MethodGet, "/sale/../stock", 404),
		both("encoded slash", http.MethodGet, "/sale%2F?lock=lua", 404),
		// nginx refuses a NUL in the path itself.
		{name: "NUL in the path", method: http.MethodGet, target: "/sale%00?lock=lua", lb: 400, direct: 404, builtin: 404},
		both("nginx's error location", http.MethodGet, "/.lb-error/413", 404),
	}
	return rows
}
