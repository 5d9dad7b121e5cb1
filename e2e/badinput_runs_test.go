package e2e

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/lockladder/lockladder/stack"
)

// What TestBadInput's stack goes on to show once the table is done:
// nobody without the run key forges a run's verdict, slows the owner's
// runs past a bound, or holds the load balancer with slow bodies.

// outside is load from someone without the run key: n clients sending
// method target in a loop through lb, each pausing a little after an
// answer that is not a 200 (a 409 while a run holds the stack comes at
// once). sold says how many of its requests were answered 200 so far;
// stop ends it and returns what they were answered: a count per status
// and reason; no answer of the lab lacks a reason.
func outside(lb, method, target string, n int) (sold func() int, stop func() map[string]int) {
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: 30 * time.Second}
	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, method, lb+target, nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil { // not stopped: no answer at all
						mu.Lock()
						got["error"]++
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
					}
					continue
				}
				var body struct {
					Reason string `json:"reason"`
				}
				json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
				resp.Body.Close()
				key := fmt.Sprint(resp.StatusCode)
				if resp.StatusCode != http.StatusOK {
					key += " " + body.Reason
				}
				mu.Lock()
				got[key]++
				mu.Unlock()
				if resp.StatusCode != http.StatusOK {
					select {
					case <-time.After(20 * time.Millisecond):
					case <-ctx.Done():
					}
				}
			}
		})
	}
	return func() int {
			mu.Lock()
			defer mu.Unlock()
			return got["200"]
		}, sync.OnceValue(func() map[string]int {
			cancel()
			wg.Wait()
			client.CloseIdleConnections()
			return got
		})
}

// wantReasons fails t for an outside answer that is not a 200 or a
// refusal that says why.
func wantReasons(t *testing.T, got map[string]int) {
	t.Helper()
	for k, n := range got {
		if code, reason, _ := strings.Cut(k, " "); code != "200" && reason == "" {
			t.Errorf("%d outside answers %s without a reason", n, code)
		}
	}
}

// checkVerdictsNotForged is the forgery: 150 clients without a
// key selling in a loop, then races (and a bench run) of lua, a correct
// lock. Their requests admitted before a run took the guard land after
// its reset; they sell the lab's item, never the run's, so every verdict
// is SAFE, exactly: the run's sections all its own.
func checkVerdictsNotForged(t *testing.T, st *stack.Stack) {
	lb := st.URL()
	if a, err := sendRaw(lb, http.MethodPost, "/reset?stock=1000000", nil, false, nil); err != nil || a.code != 200 {
		t.Fatalf("reset: %d %s %v", a.code, a.body, err)
	}
	sold, stop := outside(lb, http.MethodPost, "/sale?lock=lua", 150)
	defer stop() // once: a failed race stops it too
	for deadline := time.Now().Add(30 * time.Second); sold() < 150; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the outside's 150 loops sold %d in 30 s, want their sales under way before the races", sold())
		}
	}
	for i := range 10 {
		res := postRace(t, lb, "lock=lua&endpoint=sale&n=300&c=20")
		if res.Verdict != bench.VerdictSafe || res.Oversold != 0 || res.Remaining != res.Initial-int64(res.OK) ||
			res.Sections != res.OK || res.Overlaps != 0 {
			t.Errorf("race %d of 10 under the outside's sales: %s, %d ok of %d, remaining %d of %d, %d sections, %d overlaps; want SAFE, every section the race's own",
				i+1, res.Verdict, res.OK, res.Requests, res.Remaining, res.Initial, res.Sections, res.Overlaps)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	row, err := bench.RunOne(ctx, bench.Config{URL: lb, RunKey: st.RedisPassword(), Instances: st.InstanceURLs(),
		Requests: 300, Concurrency: 20, Stock: 1000}, "lua", "sale")
	if err != nil || row.Verdict != bench.VerdictSafe || row.Sections != row.OK {
		t.Errorf("a bench run under the outside's sales: %v, %s, %d sections of %d ok; want SAFE", err, row.Verdict, row.Sections, row.OK)
	}
	got := stop()
	t.Logf("the outside's answers: %v", got)
	wantReasons(t, got)
	if got["409 run_in_progress"] == 0 || got["200"] == 0 {
		t.Errorf("the outside's answers %v: want sales between the runs and refusals during them", got)
	}
}

// checkOwnerFirst: the owner's runs (the run key) get the stack within a
// bounded wait whatever anyone without it does: a flood of new items
// fills the cap of the lab's items (the owner's are its run's own), and
// the cap frees once they idle; races back to back from a client without
// the key give the stack up to the owner's run at once.
func checkOwnerFirst(t *testing.T, st *stack.Stack) {
	lb := st.URL()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner := func(what string, skus int) {
		t.Helper()
		asked := time.Now()
		row, err := bench.RunOne(ctx, bench.Config{URL: lb, RunKey: st.RedisPassword(), Instances: st.InstanceURLs(),
			Requests: 200, Concurrency: 10, Stock: 100, SKUs: skus}, "lua", "sale")
		if err != nil || row.Verdict != bench.VerdictSafe {
			t.Fatalf("the owner's run %s: %v, %s", what, err, row.Verdict)
		}
		if waited := row.Began.Sub(asked); waited > 10*time.Second {
			t.Errorf("the owner's run %s started %s after it was asked, want within 10s", what, waited.Round(time.Millisecond))
		} else {
			t.Logf("the owner's run %s started %s after it was asked", what, waited.Round(time.Millisecond))
		}
	}

	// 2,000 new items from someone without the key: the cap.
	flood := make(chan int, 2000)
	for i := range 2000 {
		flood <- i
	}
	close(flood)
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for i := range flood {
				a, err := sendRaw(lb, http.MethodPost, fmt.Sprintf("/reset?sku=flood-%d&stock=1", i), nil, false, nil)
				mu.Lock()
				if err != nil {
					codes[0]++
				} else {
					codes[a.code]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	flooded := time.Now()
	t.Logf("the flood's answers: %v", codes)
	owner("after a flood of items, on 10 items of its own", 10)
	// The lab's items a flood made go once idle: someone else's
	// /reset?skus=10 passes soon after.
	for {
		a, err := sendRaw(lb, http.MethodPost, "/reset?stock=5&skus=10", nil, false, nil)
		if err == nil && a.code == http.StatusOK {
			t.Logf("/reset?skus=10 passed %s after the flood", time.Since(flooded).Round(time.Millisecond))
			break
		}
		if time.Since(flooded) > 30*time.Second {
			t.Fatalf("/reset?skus=10 %s after the flood: %d %s %v, want the flood's items dropped once idle", time.Since(flooded), a.code, a.body, err)
		}
		time.Sleep(time.Second)
	}

	// Races back to back from a client without the key.
	raceCtx, stopRaces := context.WithCancel(ctx)
	var races sync.WaitGroup
	races.Go(func() {
		for raceCtx.Err() == nil {
			req, _ := http.NewRequestWithContext(raceCtx, http.MethodPost, lb+"/race?lock=lua&endpoint=sale&n=5000&c=20", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				time.Sleep(50 * time.Millisecond)
			}
		}
	})
	defer func() { stopRaces(); races.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a, err := sendRaw(lb, http.MethodGet, "/guard", nil, false, nil)
		if err == nil && strings.Contains(string(a.body), `"owner":"race of lua on sale"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no race took the stack: %s %v", a.body, err)
		}
	}
	owner("while races back to back hold the stack", 0)
}

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
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		opened   int
		refused  int
		stopSlow = make(chan struct{})
	)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	for range 2000 {
		wg.Go(func() {
			c, err := d.Dial("tcp", host)
			if err != nil {
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "POST /sale?lock=atomic HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", host)
			mu.Lock()
			opened++
			mu.Unlock()
			answered := make(chan string, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					answered <- ""
					return
				}
				resp.Body.Close()
				answered <- resp.Status
			}()
			tick := time.NewTicker(20 * time.Second)
			defer tick.Stop()
			for {
				select {
				case s := <-answered:
					if strings.HasPrefix(s, "503") {
						mu.Lock()
						refused++
						mu.Unlock()
					}
					return
				case <-tick.C:
					c.Write([]byte("x"))
				case <-stopSlow:
					return
				}
			}
		})
	}
	defer func() { close(stopSlow); wg.Wait() }()

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
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		settled := opened == 2000 && refused >= 2000-httplimit.PerClient
		mu.Unlock()
		if settled {
			break
		}
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
	mu.Lock()
	t.Logf("slow connections: %d opened, %d refused 503 at once; 5 sales from another address meanwhile, the slowest in %s",
		opened, refused, slowest.Round(time.Millisecond))
	mu.Unlock()
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
	refused, stop := slowBodies(host, "POST /play HTTP/1.1\r\nHost: "+host+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", n)
	defer stop()
	for deadline := time.Now().Add(30 * time.Second); refused() < n-httplimit.RacePerClient; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%d of %d slow /play refused after 30 s, want all but %d", refused(), n, httplimit.RacePerClient)
			break
		}
	}
	start := time.Now()
	res := postRace(t, lb, "lock=lua&endpoint=sale&n=50&c=5")
	t.Logf("%d slow /play from 127.0.0.2, %d refused 503 at once; a race from 127.0.0.1 meanwhile: %s, %d ok, in %s",
		n, refused(), res.Verdict, res.OK, time.Since(start).Round(time.Millisecond))
	if res.Verdict != bench.VerdictSafe || res.OK != 50 {
		t.Errorf("the race during the slow /play: %s, %d ok of 50, want SAFE, every sale", res.Verdict, res.OK)
	}
}

// slowBodies opens n connections to host from 127.0.0.2, each sending
// req (a header and the start of a body it never finishes). refused
// counts those answered a 503 too_many_connections; stop closes them
// all.
func slowBodies(host, req string, n int) (refused func() int, stop func()) {
	var (
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
		count  int
		wg     sync.WaitGroup
		next   = make(chan struct{}, n)
	)
	for range n {
		next <- struct{}{}
	}
	close(next)
	// A few dialers, not n at once: a SYN backlog overflowed is a retry
	// a second later.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}
	for range 32 {
		wg.Go(func() {
			for range next {
				c, err := d.Dial("tcp", host)
				if err != nil {
					continue
				}
				mu.Lock()
				if closed {
					mu.Unlock()
					c.Close()
					continue
				}
				conns = append(conns, c)
				mu.Unlock()
				c.Write([]byte(req))
				wg.Go(func() {
					resp, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						return
					}
					var body map[string]string
					json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&body)
					if resp.StatusCode == http.StatusServiceUnavailable && body["reason"] == httplimit.ReasonTooManyConnections {
						mu.Lock()
						count++
						mu.Unlock()
					}
				})
			}
		})
	}
	return func() int {
			mu.Lock()
			defer mu.Unlock()
			return count
		}, func() {
			mu.Lock()
			closed = true
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		}
}
