package bench_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/internal/fakeshop"
)

// fakeApp implements the app's HTTP contract (README, "Endpoints") over
// in-memory items (package fakeshop), behind what looks like three
// instances. Each lock name picks a behaviour:
//
//   - "none": the read-modify-write with no exclusion (read, sleep, write),
//     which loses updates and oversells;
//   - "atomic": the same operation under a mutex, which is safe;
//   - "flaky": safe, but every 4th request answers 503 untouched;
//   - "drop": safe, but every 5th request's connection is cut unanswered;
//   - "slow": never answers until the client goes away;
//   - "cross": safe but for two requests, the first for item 1, which
//     answers 200 and sells nothing (an oversell), and the first for
//     item 2, which sells and answers 503 (a lost answer): their totals
//     balance, each item's books do not.
//
// sku= picks an item; /reset?skus=K sets items "1" to K.
// Any other lock is a 400, as the app does.
type fakeApp struct {
	strategies []string // what GET /strategies lists
	// unavailable: locks GET /strategies lists as unavailable, and why;
	// their requests answer 503 server_missing.
	unavailable map[string]string
	raceDelay   time.Duration // the sleep in "none" between read and write
	failReset   int           // when set, POST /reset answers this status
	failStock   int           // when set, GET /stock answers this status
	failList    int           // when set, GET /strategies answers this status

	inv     fakeshop.Item
	items   map[string]*fakeshop.Item // by sku, after /reset?skus=K
	crossed map[string]bool           // the items "cross" has broken
	mu      sync.Mutex
	methods map[string]int // methods of load requests since reset

	hits        atomic.Int64 // load requests since the last reset
	inflight    atomic.Int64
	maxInflight atomic.Int64
	resets      atomic.Int64
}

var fakeInstances = []string{"app-1", "app-2", "app-3"}

// start serves the fake on a loopback httptest server.
func (f *fakeApp) start(t *testing.T) *httptest.Server {
	t.Helper()
	if f.strategies == nil {
		f.strategies = []string{"none", "atomic"}
	}
	if f.raceDelay == 0 {
		f.raceDelay = time.Millisecond
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

// writeJSON answers as the app does (the fakes' shared helper).
var writeJSON = fakeshop.WriteJSON

func (f *fakeApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := f.hits.Load() // only to spread X-Instance; exactness does not matter
	w.Header().Set("X-Instance", fakeInstances[int(seq)%len(fakeInstances)])
	switch r.URL.Path {
	case "/strategies":
		if f.failList != 0 {
			writeJSON(w, f.failList, map[string]string{"error": "boom"})
			return
		}
		list := []map[string]string{}
		for _, s := range f.strategies {
			e := map[string]string{"name": s, "summary": "s", "flaw": "f"}
			if why := f.unavailable[s]; why != "" {
				e["unavailable"] = why
			}
			list = append(list, e)
		}
		writeJSON(w, http.StatusOK, list)
	case "/reset":
		if r.Method != http.MethodPost {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method"})
			return
		}
		if f.failReset != 0 {
			writeJSON(w, f.failReset, map[string]string{"error": "boom"})
			return
		}
		n, err := strconv.ParseInt(r.URL.Query().Get("stock"), 10, 64)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "stock"})
			return
		}
		f.inv.Reset(n)
		f.mu.Lock()
		f.methods = map[string]int{}
		f.crossed = map[string]bool{}
		if k, err := strconv.Atoi(r.URL.Query().Get("skus")); err == nil {
			f.items = map[string]*fakeshop.Item{}
			for i := 1; i <= k; i++ {
				f.items[strconv.Itoa(i)] = fakeshop.NewItem(n)
			}
		}
		f.mu.Unlock()
		f.hits.Store(0)
		f.maxInflight.Store(0)
		f.resets.Add(1)
		writeJSON(w, http.StatusOK, map[string]int64{"stock": n, "sold": 0, "num": 0})
	case "/stock":
		if f.failStock != 0 {
			writeJSON(w, f.failStock, map[string]string{"error": "boom"})
			return
		}
		writeJSON(w, http.StatusOK, f.stockOf(r).Counters())
	case "/healthz":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case "/sale", "/testLock":
		if why := f.unavailable[r.URL.Query().Get("lock")]; why != "" {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": why, "reason": "server_missing"})
			return
		}
		f.load(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeApp) load(w http.ResponseWriter, r *http.Request) {
	n := f.hits.Add(1)
	in := f.inflight.Add(1)
	left := false // the request is over before the handler returns
	defer func() {
		if !left {
			f.inflight.Add(-1)
		}
	}()
	for {
		m := f.maxInflight.Load()
		if in <= m || f.maxInflight.CompareAndSwap(m, in) {
			break
		}
	}
	f.mu.Lock()
	f.methods[r.Method]++
	f.mu.Unlock()

	lock, inv := r.URL.Query().Get("lock"), f.stockOf(r)
	op := inv.Incr
	if r.URL.Path == "/sale" {
		op = inv.Sell
	}
	switch lock {
	case "none":
		op(w, f.raceDelay)
	case "atomic":
		op(w, 0)
	case "flaky":
		if n%4 == 0 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "lock not had", "reason": "lock_timeout"})
			return
		}
		// It waited for its lock: n%40 ms, as the app says it.
		w.Header().Set(contract.HeaderLockWait, strconv.FormatInt(n%40, 10)+".500")
		op(w, 0)
	case "drop":
		if n%5 == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				// Out of flight before the client can see the close
				// and send its next request.
				f.inflight.Add(-1)
				left = true
				conn.Close()
			}
			return
		}
		op(w, 0)
	case "slow":
		<-r.Context().Done()
	case "cross":
		sku := r.URL.Query().Get("sku")
		f.mu.Lock()
		first := !f.crossed[sku]
		f.crossed[sku] = true
		f.mu.Unlock()
		switch {
		case first && sku == "1":
			writeJSON(w, http.StatusOK, map[string]any{"sold": true, "remaining": inv.Counters()["stock"], "num": inv.Counters()["num"]})
		case first && sku == "2":
			op(httptest.NewRecorder(), 0)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "redis went away", "reason": "unavailable"})
		default:
			op(w, 0)
		}
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unknown lock", "locks": f.strategies})
	}
}

// stockOf is the item r names with sku= (the lab's item without it).
func (f *fakeApp) stockOf(r *http.Request) *fakeshop.Item {
	sku := r.URL.Query().Get("sku")
	if sku == "" {
		return &f.inv
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.items[sku]; s != nil {
		return s
	}
	return &fakeshop.Item{}
}

// loadMethods returns the methods of the load requests since the last reset.
func (f *fakeApp) loadMethods() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]int, len(f.methods))
	for k, v := range f.methods {
		m[k] = v
	}
	return m
}
