package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
)

// What TestBadInput's stack goes on to show once the table is done:
// nobody without the run key forges a run's verdict, slows the owner's
// runs past a bound (slow clients: badinput_slow_test.go).

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
