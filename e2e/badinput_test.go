package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sendRaw writes method and target verbatim (no cleaning, no escaping,
// no absolute form) on a fresh connection to base, with body under a
// Content-Length or chunked, and reads the answer. A server may answer an
// oversized request before reading all of it and close: the answer counts,
// not the failed write.
func sendRaw(base, method, target string, body []byte, chunked bool, header map[string]string) (badAnswer, error) {
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return badAnswer{}, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))

	var head strings.Builder
	hostHeader := host
	if h, ok := header["Host"]; ok {
		hostHeader = h
	}
	proto := "HTTP/1.1"
	if p, ok := header[":proto"]; ok {
		proto = p
	}
	fmt.Fprintf(&head, "%s %s %s\r\n", method, target, proto)
	if hostHeader != "" {
		fmt.Fprintf(&head, "Host: %s\r\n", hostHeader)
	}
	head.WriteString("Connection: close\r\n")
	for k, v := range header {
		if k != "Host" && !strings.HasPrefix(k, ":") {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	switch {
	case body != nil && chunked:
		head.WriteString("Transfer-Encoding: chunked\r\n")
	case body != nil || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		fmt.Fprintf(&head, "Content-Length: %d\r\n", len(body))
	}
	head.WriteString("\r\n")
	wrote := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(conn)
		w.WriteString(head.String())
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			if chunked {
				fmt.Fprintf(w, "%x\r\n", n)
			}
			w.Write(rest[:n])
			if chunked {
				w.WriteString("\r\n")
			}
			rest = rest[n:]
		}
		if body != nil && chunked {
			w.WriteString("0\r\n\r\n")
		}
		wrote <- w.Flush()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		select {
		case werr := <-wrote:
			if werr != nil {
				return badAnswer{}, fmt.Errorf("%w (writing: %v)", err, werr)
			}
		default:
		}
		return badAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return badAnswer{resp.StatusCode, resp.Header, b}, err
}

type badAnswer struct {
	code   int
	header http.Header
	body   []byte
}

// shopState is what no bad request may change.
type shopState struct {
	Stock, Sold, Num int64
	Keys             int64    // DBSIZE
	Names            []string // the keys, sorted
}

func (s shopState) String() string {
	return fmt.Sprintf("stock %d sold %d num %d, %d keys %q", s.Stock, s.Sold, s.Num, s.Keys, s.Names)
}

func (s shopState) equal(o shopState) bool {
	return s.Stock == o.Stock && s.Sold == o.Sold && s.Num == o.Num && s.Keys == o.Keys && slices.Equal(s.Names, o.Names)
}

func readShop(t *testing.T, base string, rdb *redis.Client) shopState {
	t.Helper()
	a, err := sendRaw(base, http.MethodGet, "/stock", nil, false, nil)
	if err != nil || a.code != http.StatusOK {
		t.Fatalf("GET /stock: %d %s %v", a.code, a.body, err)
	}
	var s shopState
	if err := json.Unmarshal(a.body, &s); err != nil {
		t.Fatalf("GET /stock: %s: %v", a.body, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.Keys, err = rdb.DBSize(ctx).Result(); err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	if s.Names, err = rdb.Keys(ctx, "*").Result(); err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	slices.Sort(s.Names)
	return s
}

// TestBadInput sends every bad request of the table through the load
// balancer (nginx) and straight to an instance, both with faults off: each
// gets the 4xx the table wants, as a JSON object with an error (a 405 with
// the right Allow), and leaves stock, sold, num and the Redis key count as
// they were.
func TestBadInput(t *testing.T) {
	lane(t)
	start := time.Now()
	st := startStack(t) // instances without -faults
	for _, l := range st.Summary() {
		t.Log(l)
	}
	behindNginx := slices.ContainsFunc(st.Summary(), func(l string) bool { return strings.HasPrefix(l, "lb: nginx") })
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr(), Password: st.RedisPassword(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	lb, direct := st.URL(), st.InstanceURLs()[0]

	// A known, non-zero state: sales and increments through both paths,
	// under a lock and the atomic script.
	for _, req := range []struct{ base, method, target string }{
		{lb, http.MethodPost, "/reset?stock=100"},
		{lb, http.MethodPost, "/sale?lock=lua"},
		{lb, http.MethodGet, "/sale?lock=lua&wait=notify"},
		{direct, http.MethodPost, "/sale?lock=fenced&reenter=0"},
		{lb, http.MethodPost, "/testLock?lock=lua"},
		{direct, http.MethodGet, "/testLock?lock=atomic"},
		{lb, http.MethodPost, "/testLock?lock=fenced"},
		{lb, http.MethodPost, "/testLock?lock=reentrant&reenter=1"},
	} {
		a, err := sendRaw(req.base, req.method, req.target, nil, false, nil)
		if err != nil || a.code != http.StatusOK {
			t.Fatalf("setup %s %s: %d %s %v", req.method, req.target, a.code, a.body, err)
		}
	}
	before := readShop(t, lb, rdb)
	if before.Stock != 97 || before.Sold != 3 || before.Num != 4 || before.Keys == 0 {
		t.Fatalf("after setup: %v, want stock 97, sold 3, num 4", before)
	}
	t.Logf("before: %v", before)

	rows := badInputRows()
	sent := 0
	for _, row := range rows {
		for _, path := range []struct {
			name, base string
			want       int
		}{{"lb", lb, row.lb}, {"direct", direct, row.direct}} {
			if path.want == 0 {
				continue
			}
			t.Run(path.name+"/"+row.name, func(t *testing.T) {
				want := path.want
				if path.name == "lb" && !behindNginx {
					if row.builtinSkip != "" {
						t.Skipf("behind the built-in proxy, not nginx (CI=true requires nginx): %s", row.builtinSkip)
					}
					if row.builtin != 0 {
						want = row.builtin
					}
				}
				sent++
				a, err := sendRaw(path.base, row.method, row.target, row.body, row.chunked, row.header)
				// The shop first, whatever the answer: a failed read or
				// checkBadAnswer stops the subtest.
				after := readShop(t, lb, rdb)
				if !after.equal(before) {
					t.Errorf("the shop changed:\nbefore %v\nafter  %v", before, after)
					before = after // judge the next row on its own
				}
				if err != nil {
					t.Fatalf("%s: %v", row.method, err)
				}
				checkBadAnswer(t, row, want, a)
			})
		}
	}
	if n := st.Restarts(); n != 0 {
		t.Errorf("%d instance restart(s): a bad request killed an instance", n)
	}
	if after := readShop(t, lb, rdb); !after.equal(before) {
		t.Errorf("the shop changed: %v", after)
	}
	t.Logf("%d rows, %d requests checked, in %s (stack start included)", len(rows), sent, time.Since(start).Round(time.Millisecond))

	// The same stack, once the table is done: what changes the shop from
	// now on is meant to (badinput_runs_test.go).
	t.Run("verdicts nobody forges", func(t *testing.T) { checkVerdictsNotForged(t, st) })
	t.Run("the owner first", func(t *testing.T) { checkOwnerFirst(t, st) })
	t.Run("slow clients", func(t *testing.T) { checkSlowClients(t, st) })
	if behindNginx {
		t.Run("slow bodies to the race server", func(t *testing.T) { checkSlowPlays(t, st) })
	}
	if n := st.Restarts(); n != 0 {
		t.Errorf("%d instance restart(s) after the runs and the slow clients", n)
	}
	t.Logf("all in %s", time.Since(start).Round(time.Millisecond))
}

func checkBadAnswer(t *testing.T, row badRow, want int, a badAnswer) {
	t.Helper()
	show := string(a.body)
	if len(show) > 300 {
		show = show[:300] + "..."
	}
	if a.code != want {
		t.Errorf("status %d, want %d: %s", a.code, want, show)
	}
	if a.code < 400 || a.code > 499 && want < 500 {
		t.Fatalf("status %d is not a 4xx", a.code)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, show)
	}
	var body map[string]any
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Fatalf("body is not a JSON object (%v): %s", err, show)
	}
	if msg, _ := body["error"].(string); msg == "" {
		t.Errorf("no error in %s", show)
	}
	if row.reason != "" && body["reason"] != row.reason {
		t.Errorf("reason %v, want %q: %s", body["reason"], row.reason, show)
	}
	if reason, _ := body["reason"].(string); reason == "" {
		t.Errorf("no reason: every answer of the lab says one: %s", show)
	}
	if row.param != "" && body["param"] != row.param {
		t.Errorf("param %v, want %q: %s", body["param"], row.param, show)
	}
	if a.code == http.StatusMethodNotAllowed || row.allow != "" {
		got := strings.Split(a.header.Get("Allow"), ",")
		for i := range got {
			got[i] = strings.TrimSpace(got[i])
		}
		slices.Sort(got)
		wantAllow := strings.Split(row.allow, ", ")
		slices.Sort(wantAllow)
		if !slices.Equal(got, wantAllow) {
			t.Errorf("Allow %q, want %q", a.header.Get("Allow"), row.allow)
		}
	}
}
