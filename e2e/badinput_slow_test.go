package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/internal/httplimit"
	"github.com/lockladder/lockladder/internal/httplimit/httplimittest"
	"github.com/lockladder/lockladder/stack"
)

// What slow clients hold at the stack TestBadInput starts: bodies that
// never finish, at nginx (or the built-in proxy), the instances and the
// race server.

// checkSlowClients: 2,000 connections from another address, each
// sending a body of 1,000 bytes a byte every 20 s, neither starve the
// load balancer (it holds httplimit.PerClient of them, refuses the rest)
// nor hold it: a sale from this address answers within a second
// meanwhile. A body short of its Content-Length, or one sent a byte
// every 5 s (the race server's /play held one for minutes), is cut
// within 10 s; /race refuses a body at once.
func checkSlowClients(t *testing.T, st *stack.Stack) {
	lb := st.URL()
	host := strings.TrimPrefix(lb, "http://")
	raiseFiles(t, 8192)
	if a, err := sendRaw(lb, http.MethodPost, "/reset?stock=100000", nil, false, nil); err != nil || a.code != 200 {
		t.Fatalf("reset: %d %s %v", a.code, a.body, err)
	}
	const slow = 2000
	sc := httplimittest.OpenSlow(host, fmt.Sprintf("POST /sale?lock=atomic HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", host), slow)
	defer sc.Close()

	// Bounded bodies, beside: each answered (or cut) within 12 s.
	type cut struct {
		name    string
		took    time.Duration
		code    int
		wantMax time.Duration
	}
	cuts := make(chan cut, 4)
	var probes sync.WaitGroup
	probe := func(name, base, req string, every, wantMax time.Duration) {
		probes.Go(func() {
			took, code := slowRequest(strings.TrimPrefix(base, "http://"), req, every, 30*time.Second)
			cuts <- cut{name, took, code, wantMax}
		})
	}
	probe("Content-Length 100 and 3 bytes, through the load balancer", lb,
		"GET /stock HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 100\r\n\r\nabc", 0, 12*time.Second)
	probe("Content-Length 100 and 3 bytes, at an instance", st.InstanceURLs()[0],
		"GET /stock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nabc", 0, 12*time.Second)
	probe("/play's body a byte every 5 s", lb,
		"POST /play HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", 5*time.Second, 12*time.Second)
	probe("/race with a body", lb,
		"POST /race?lock=lua&endpoint=sale HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 1000\r\n\r\n{", 5*time.Second, 12*time.Second)

	// Once they are open, and those over the bound refused (nginx cuts
	// the rest at 10 s: the sales go within that).
	refused, other, err := sc.Settle(httplimit.PerClient, 10*time.Second)
	if err != nil {
		t.Fatalf("%v; otherwise: %v", err, other[:min(len(other), 3)])
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var slowest time.Duration
	for i := range 5 {
		start := time.Now()
		resp, err := client.Post(lb+"/sale?lock=lua", "", nil)
		took := time.Since(start)
		slowest = max(slowest, took)
		if err != nil {
			t.Errorf("sale %d of 5 during 2,000 slow connections: %v after %s", i+1, err, took)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || took > time.Second {
			t.Errorf("sale %d of 5 during 2,000 slow connections: %s in %s, want 200 within 1s", i+1, resp.Status, took.Round(time.Millisecond))
		}
		time.Sleep(700 * time.Millisecond)
	}
	probes.Wait()
	close(cuts)
	for c := range cuts {
		if c.took > c.wantMax {
			t.Errorf("%s: open %s (answered %d), want cut within %s", c.name, c.took.Round(time.Millisecond), c.code, c.wantMax)
		} else {
			t.Logf("%s: answered %d, closed after %s", c.name, c.code, c.took.Round(time.Millisecond))
		}
	}
	t.Logf("slow connections: %d opened, %d refused 503 at once; 5 sales from another address meanwhile, the slowest in %s",
		slow, refused, slowest.Round(time.Millisecond))
}

// slowRequest writes req to addr, then a byte every every (0: nothing
// more), and returns how long until the server closed the connection and
// the status it answered (0: none); within limit.
func slowRequest(addr, req string, every, limit time.Duration) (time.Duration, int) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, 0
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(limit))
	c.Write([]byte(req))
	done := make(chan int, 1)
	go func() {
		code := 0
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, nil); err == nil {
			code = resp.StatusCode
			io.Copy(io.Discard, resp.Body)
		}
		io.Copy(io.Discard, br) // to the close
		done <- code
	}()
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case code := <-done:
			return time.Since(start), code
		case <-tick:
			c.Write([]byte(" "))
		}
	}
}

// raiseFiles raises this process's open-file limit to n, within its
// hard limit: the slow connections are one descriptor each.
func raiseFiles(t *testing.T, n uint64) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if l.Cur >= n {
		return
	}
	l.Cur = min(n, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if l.Cur < 2200 {
		t.Skipf("open files limited to %d: the probe needs 2,000 and more", l.Cur)
	}
}

// checkSlowPlays: slow bodies to the race server from one address hold
// at most httplimit.RacePerClient of its connections through nginx (the
// race port's one client, whose own bound counts everyone's), so that
// 1,200 of them leave a race from another address its connection: it
// runs and answers its result.
func checkSlowPlays(t *testing.T, st *stack.Stack) {
	lb := st.URL()
	host := strings.TrimPrefix(lb, "http://")
	const n = 1200
	sc := httplimittest.OpenSlow(host, "POST /play HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", n)
	defer sc.Close()
	if _, other, err := sc.Settle(httplimit.RacePerClient, 30*time.Second); err != nil || sc.Refused() < n-httplimit.RacePerClient {
		t.Errorf("%d of %d slow /play refused (%v; otherwise %v), want all but %d", sc.Refused(), n, err, other[:min(len(other), 3)], httplimit.RacePerClient)
	}
	start := time.Now()
	res := postRace(t, lb, "lock=lua&endpoint=sale&n=50&c=5")
	t.Logf("%d slow /play from 127.0.0.2, %d refused 503 at once; a race from 127.0.0.1 meanwhile: %s, %d ok, in %s",
		n, sc.Refused(), res.Verdict, res.OK, time.Since(start).Round(time.Millisecond))
	if res.Verdict != bench.VerdictSafe || res.OK != 50 {
		t.Errorf("the race during the slow /play: %s, %d ok of 50, want SAFE, every sale", res.Verdict, res.OK)
	}
}
