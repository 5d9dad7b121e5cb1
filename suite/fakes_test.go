package suite_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockladder/lockladder/internal/fakeshop"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// fakeShop stands in for the app instances of one stack and their shared
// Redis (an item of package fakeshop), with each rung's flaw reduced to what the scenario's fault does to
// it (docs/scenarios.md):
//
//   - none always, local with more than one instance: the racy
//     read-modify-write;
//   - fault=crash on setnx, fault=crash-before-expire on setnx-expire: the
//     lock stays held, every later request waits 1s (the lock wait) and
//     answers 503, until /reset;
//   - any other crash: that request dies (502), the lock expires;
//   - work= past the TTL on setnx-px, lua, getset, redsync, redsync-redlock,
//     redislock; fault=check-pause on check-del; fault=pause on reentrant,
//     redlock, zookeeper and the libraries but for a fence; every getset
//     request on a skewed stack: a stale write (read, sleep while others
//     sell, write);
//   - redlock and redsync-redlock with 3 masters down: 503;
//   - pg-advisory and pg-advisory-xact under session-cut (a slow
//     business that waits up to try=), rueidislock under fault=pause: a
//     stale write;
//   - zk-lock once ZooKeeper stopped: held for good, as fault=crash on setnx.
//
// Everything else sells exactly.
type fakeShop struct {
	instances   int
	skewed      bool
	offered     []string
	mastersDown atomic.Int32

	inv   fakeshop.Item
	mu    sync.Mutex
	stuck map[string]bool
	seen  map[string]int // "lock param=value" -> load requests carrying it, since reset
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request, instance string) {
	w.Header().Set("X-Instance", instance)
	q := r.URL.Query()
	switch r.URL.Path {
	case "/healthz":
		fakeshop.WriteJSON(w, 200, map[string]string{"status": "ok"})
	case "/strategies":
		var list []map[string]string
		for _, n := range f.offered {
			list = append(list, map[string]string{"name": n})
		}
		fakeshop.WriteJSON(w, 200, list)
	case "/reset":
		n, _ := strconv.ParseInt(q.Get("stock"), 10, 64)
		f.inv.Reset(n)
		f.mu.Lock()
		f.stuck, f.seen = map[string]bool{}, map[string]int{}
		f.mu.Unlock()
		fakeshop.WriteJSON(w, 200, map[string]int64{"stock": n, "sold": 0, "num": 0})
	case "/stock":
		fakeshop.WriteJSON(w, 200, f.inv.Counters())
	case "/sale":
		work, _ := time.ParseDuration(q.Get("work"))
		f.sale(w, r, q.Get("lock"), q.Get("fault"), work > 200*time.Millisecond, q.Has("try"))
	default:
		http.NotFound(w, r)
	}
}

// crashed reports whether a holder of lock exited since the reset.
func (f *fakeShop) crashed(lock string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stuck["crashed "+lock]
}

// sale sells one item under lock; slow says the business outlives the
// scenarios' 200ms TTL.
func (f *fakeShop) sale(w http.ResponseWriter, r *http.Request, lock, fault string, slow, tries bool) {
	f.mu.Lock()
	for k, vs := range r.URL.Query() {
		if k != "lock" {
			f.seen[lock+" "+k+"="+vs[0]]++
		}
	}
	stuck := f.stuck[lock]
	f.mu.Unlock()

	crash := fault == "crash" || (fault == "crash-before-expire" && lock == "setnx-expire")
	switch {
	case stuck:
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		fakeshop.WriteJSON(w, 503, map[string]string{"error": "lock not obtained", "reason": "lock_timeout"})
	case crash:
		f.mu.Lock()
		if lock == "setnx" || lock == "setnx-expire" {
			f.stuck[lock] = true
		}
		f.stuck["crashed "+lock] = true
		f.mu.Unlock()
		fakeshop.WriteJSON(w, 502, map[string]string{"error": "the instance exited"})
	case (lock == "redlock" || lock == "redsync-redlock") && f.mastersDown.Load() >= 3:
		time.Sleep(20 * time.Millisecond)
		fakeshop.WriteJSON(w, 503, map[string]string{"error": "no majority", "reason": "lock_timeout"})
	case lock == "none" || (lock == "local" && f.instances > 1):
		f.inv.Sell(w, time.Millisecond)
	case slow && slices.Contains([]string{"setnx-px", "lua", "getset", "redsync", "redsync-redlock", "redislock"}, lock),
		fault == "check-pause" && lock == "check-del",
		fault == "pause" && slices.Contains([]string{"reentrant", "redlock", "zookeeper",
			"redsync", "redsync-redlock", "redislock", "redislock-refresh", "etcd-mutex", "zk-lock"}, lock),
		// session-cut's armed requests (a slow business waiting up to
		// try=5s) have their session cut under them.
		slow && tries && slices.Contains([]string{"pg-advisory", "pg-advisory-xact"}, lock),
		fault == "pause" && lock == "rueidislock",
		lock == "del-setnx" && f.crashed(lock), // two waiters took the expired lock
		f.skewed && lock == "getset":
		f.inv.Sell(w, 30*time.Millisecond) // a stale write
	default:
		f.inv.Sell(w, 0)
	}
}

// fakeStack is a Topology over a fakeShop: a "load balancer" and one
// server per instance, all on loopback.
type fakeStack struct {
	cfg       stack.Config
	shop      *fakeShop
	lb        *httptest.Server
	instances []*httptest.Server
	lbHits    atomic.Int64
	direct    atomic.Int64 // load requests to instance 1 directly

	mu      sync.Mutex
	log     []string // master and back end stops and starts
	down    map[string]bool
	stopped bool
}

func (s *fakeStack) URL() string { return s.lb.URL }

func (s *fakeStack) InstanceURLs() []string {
	var urls []string
	for _, in := range s.instances {
		urls = append(urls, in.URL)
	}
	return urls
}

func (s *fakeStack) Stop() error {
	s.lb.Close()
	for _, in := range s.instances {
		in.Close()
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	return nil
}

func (s *fakeStack) StopMaster(i int) error {
	s.shop.mastersDown.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("stop %d", i))
	return nil
}

// CutPostgresHolders stands for the cut: the shop's flaw is its
// sale's (a session-cut request writes stale).
func (s *fakeStack) CutPostgresHolders(context.Context, time.Duration, time.Duration) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, "cut postgres")
	return 1, nil
}

func (s *fakeStack) Backends() []string { return []string{"zookeeper", "mariadb", "etcd"} }

func (s *fakeStack) StopBackend(kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down == nil {
		s.down = map[string]bool{}
	}
	s.down[kind] = true
	s.log = append(s.log, "stop "+kind)
	if kind == "zookeeper" { // a failed Unlock: zk-lock's znode stays
		s.shop.mu.Lock()
		s.shop.stuck["zk-lock"] = true
		s.shop.mu.Unlock()
	}
	return nil
}

func (s *fakeStack) StartBackend(kind string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down[kind] {
		return nil // already running: the Undo after the hook
	}
	s.down[kind] = false
	s.log = append(s.log, "start "+kind)
	return nil
}

func (s *fakeStack) StartMaster(i int) error {
	s.shop.mastersDown.Add(-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("start %d", i))
	return nil
}

// fakeStacks starts fakeStacks and keeps them by scenario (the last
// element of the run dir).
type fakeStacks struct {
	offered []string
	mu      sync.Mutex
	started map[string]*fakeStack
}

func (fs *fakeStacks) start(_ context.Context, cfg stack.Config) (suite.Stack, error) {
	shop := &fakeShop{
		instances: cfg.Instances,
		offered:   fs.offered,
		skewed:    slices.Contains(cfg.InstanceArgs[2], "-clock-skew"),
		stuck:     map[string]bool{},
		seen:      map[string]int{},
	}
	s := &fakeStack{cfg: cfg, shop: shop}
	var rr atomic.Int64 // round robin over every request, as a load balancer does
	s.lb = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sale" {
			s.lbHits.Add(1)
		}
		shop.ServeHTTP(w, r, "app"+strconv.Itoa(int(rr.Add(1))%cfg.Instances+1))
	}))
	for i := range cfg.Instances {
		name := "app" + strconv.Itoa(i+1)
		s.instances = append(s.instances, httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if i == 0 && r.URL.Path == "/sale" {
				s.direct.Add(1)
			}
			shop.ServeHTTP(w, r, name)
		})))
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.started[filepath.Base(cfg.Dir)] = s
	return s, nil
}
