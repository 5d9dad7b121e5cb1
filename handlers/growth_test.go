package handlers_test

import (
	"context"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// countingLadder counts the Obtains of its rungs' Lockers: none means no
// rung kept anything for a request, in memory or on its server.
type countingLadder struct {
	handlers.Ladder
	obtains *atomic.Int64
}

func (l countingLadder) Lookup(name string) (lock.Info, lock.Locker, bool) {
	info, locker, ok := l.Ladder.Lookup(name)
	if locker != nil {
		locker = countingLocker{locker, l.obtains}
	}
	return info, locker, ok
}

type countingLocker struct {
	lock.Locker
	obtains *atomic.Int64
}

func (l countingLocker) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	l.obtains.Add(1)
	return l.Locker.Obtain(ctx, key, c)
}

// TestNoSuchItem: under every lock, /sale and /testLock of an item that
// /reset never made, and /stock of it, answer 404 no_such_item, take no
// lock and change nothing in Redis; bad input is still a 400 first; once
// /reset makes the item it sells.
func TestNoSuchItem(t *testing.T) {
	var obtains atomic.Int64
	e := newEnvConfig(t, func(c *handlers.Config) { c.Ladder = countingLadder{c.Ladder, &obtains} })
	mustDo(t, e, "POST", "/reset?stock=5", 200)
	mustDo(t, e, "POST", "/reset?stock=5&skus=2", 200)
	before := e.mr.Dump()
	for _, name := range e.ladder.Names() {
		if info, _, _ := e.ladder.Lookup(name); info.Unavailable != "" || info.Store == lock.StoreMariaDB {
			continue // 503 server_missing, or 400: their own tests
		}
		for _, target := range []string{"/sale?lock=" + name + "&sku=3", "/testLock?lock=" + name + "&sku=nope"} {
			_, _, body := mustDo(t, e, "POST", target, 404)
			if msg, _ := body["error"].(string); body["reason"] != contract.ReasonNoSuchItem || body["lock"] != name ||
				!strings.Contains(msg, "/reset") {
				t.Errorf("%s: %v, want reason no_such_item naming the lock and how to make the item", target, body)
			}
		}
	}
	if _, _, body := mustDo(t, e, "GET", "/stock?sku=3", 404); body["reason"] != contract.ReasonNoSuchItem {
		t.Errorf("/stock?sku=3: %v, want reason no_such_item", body)
	}
	mustDo(t, e, "GET", "/sale?lock=lua&sku=3&wait=spin", 400)
	mustDo(t, e, "GET", "/stock?sku=3&x=1", 400)
	if n := obtains.Load(); n != 0 {
		t.Errorf("%d locks taken for items that do not exist", n)
	}
	if after := e.mr.Dump(); after != before {
		t.Errorf("Redis changed:\nbefore %s\nafter  %s", before, after)
	}
	mustDo(t, e, "POST", "/reset?stock=1&sku=3", 200)
	mustDo(t, e, "POST", "/sale?lock=lua&sku=3", 200)
	mustDo(t, e, "POST", "/sale?lock=lua&sku=3", 409)
	mustDo(t, e, "GET", "/stock?sku=3", 200)
}

// TestResetDeletesEveryLockKey: the keys every Redis rung leaves under an
// item's tag are among the ones Reset deletes by name (Item.LockKeys),
// and after a reset none is left.
func TestResetDeletesEveryLockKey(t *testing.T) {
	e := newEnv(t)
	it := inventory.ItemOf("2")
	names := map[string]bool{}
	for _, k := range it.LockKeys() {
		names[k] = true
	}
	for _, k := range []string{it.StockLock, it.NumLock} {
		for _, derived := range []string{k, lock.FenceKey(k), lock.QueueKey(k), lock.QueueKey(k) + ":live", k + ":fence:max"} {
			if !names[derived] {
				t.Errorf("LockKeys lacks %s", derived)
			}
		}
	}
	mustDo(t, e, "POST", "/reset?stock=1000&sku=2", 200)
	for _, name := range e.ladder.Names() {
		if info, _, _ := e.ladder.Lookup(name); info.Unavailable != "" || info.Store == lock.StoreMariaDB {
			continue
		}
		var wg sync.WaitGroup
		for range 8 { // contention: the queues of fair and the cohorts
			wg.Go(func() {
				for range 3 {
					e.do(t, "POST", "/sale?lock="+name+"&sku=2")
					e.do(t, "POST", "/testLock?lock="+name+"&sku=2")
				}
			})
		}
		wg.Wait()
	}
	var seen []string
	for _, k := range e.mr.Keys() {
		if strings.HasPrefix(k, inventory.LockPrefix+it.Tag) {
			seen = append(seen, k)
			if !names[k] {
				t.Errorf("a rung left %s, which Reset does not name", k)
			}
		}
	}
	t.Logf("lock keys left under %s: %q", it.Tag, seen)
	mustDo(t, e, "POST", "/reset?stock=1&sku=2", 200)
	for _, k := range e.mr.Keys() {
		if strings.HasPrefix(k, inventory.LockPrefix+it.Tag) {
			t.Errorf("%s survived the reset", k)
		}
	}
}

// TestResetManyItemsNamesTheirKeys: /reset?skus=K deletes each item's
// lock keys by name, without walking the keyspace: one transaction per
// item (MULTI, three SETs, one DEL, EXEC), however many keys Redis holds.
func TestResetManyItemsNamesTheirKeys(t *testing.T) {
	e := newEnv(t)
	for i := range 5000 {
		e.mr.Set("unrelated:"+strconv.Itoa(i), "x")
	}
	stale := inventory.ItemOf("7").StockLock
	e.mr.Set(stale, "stale")
	before := e.mr.CommandCount()
	mustDo(t, e, "POST", "/reset?stock=3&skus=1000", 200)
	// A few more for a new connection's handshake; a SCAN per item
	// would be at least 5 more per item (COUNT 1000 over 5000 keys).
	if n := e.mr.CommandCount() - before; n > 6*1000+20 {
		t.Errorf("%d commands to reset 1000 items, want 6 per item", n)
	}
	if e.mr.Exists(stale) {
		t.Error("item 7's stale lock survived /reset?skus=1000")
	}
}

// TestUnknownSkusGrowNothing sends 10,000 distinct skus that /reset never
// made, spread over every lock, /sale, /testLock and /stock, to an
// instance on every real server: each is a 404, no lock is taken, and
// nothing grows: no key in Redis (DBSIZE), no znode, no lock row, no
// key in etcd, and the instance's heap stays where it was.
func TestUnknownSkusGrowNothing(t *testing.T) {
	rdb, _ := redistest.Start(t)
	zkc, _ := servertest.ZooKeeper(t, 5*time.Second)
	db := servertest.MariaDB(t)
	etcd := servertest.Etcd(t)
	ladder := ladder.New(ladder.Backends{Redis: rdb, ZooKeeper: zkc, Etcd: etcd, DB: db},
		lock.Options{TTL: 2 * time.Second, Wait: 2 * time.Second}, lock.RedlockOptions{})
	var obtains atomic.Int64
	gin.SetMode(gin.TestMode)
	e := &env{router: handlers.New(handlers.Config{Instance: "g-1", Inventory: inventory.New(rdb),
		Ladder: countingLadder{ladder, &obtains}, Hosts: []string{"example.com"}})}

	// Every server in use: item 1 sold once under every lock (reset
	// before each: the locks' fencing tokens are not comparable).
	var names []string
	for _, r := range ladder.Rungs() {
		if r.Unavailable != "" || r.Store == lock.StoreMariaDB {
			continue
		}
		names = append(names, r.Name)
		mustDo(t, e, "POST", "/reset?stock=1000&sku=1", 200)
		mustDo(t, e, "POST", "/sale?lock="+r.Name+"&sku=1", 200)
	}
	ctx := context.Background()
	type state struct{ keys, znodes, rows, etcdKeys int64 }
	read := func() state {
		t.Helper()
		var s state
		var err error
		if s.keys, err = rdb.DBSize(ctx).Result(); err != nil {
			t.Fatal(err)
		}
		s.znodes = countZnodes(t, zkc, "/")
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+lock.LocksTable).Scan(&s.rows); err != nil {
			t.Fatal(err)
		}
		r, err := etcd.Get(ctx, "/lockladder/", clientv3.WithPrefix(), clientv3.WithCountOnly()) // the lab's keys: all its user may read
		if err != nil {
			t.Fatal(err)
		}
		s.etcdKeys = r.Count
		return s
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// send sends n requests for skus prefix0 to prefix<n-1>, 8 at a time.
	send := func(prefix string, n int64) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
					target := [...]string{"/sale?lock=", "/testLock?lock=", "/stock?lock="}[i%3] + names[int(i/3)%len(names)] +
						"&sku=" + prefix + strconv.FormatInt(i, 10)
					method := "POST"
					if i%3 == 2 {
						method = "GET"
					}
					if code, _, body := e.do(t, method, target); code != 404 || body["reason"] != contract.ReasonNoSuchItem {
						t.Errorf("%s %s: %d %v, want 404 no_such_item", method, target, code, body)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	send("warm", 1000) // the connection pools, gin's, the metrics' series
	before, heapBefore := read(), heap()
	taken := obtains.Load()
	const n = 10_000
	send("g", n)
	after, heapAfter := read(), heap()
	// Grew, not changed: ZooKeeper's container reaper may remove item
	// 1's emptied lock container meanwhile (znodes 6 to 5, seen once).
	if after.keys > before.keys || after.znodes > before.znodes || after.rows > before.rows || after.etcdKeys > before.etcdKeys {
		t.Errorf("state grew: before %+v, after %+v (Redis keys, znodes, lock rows, etcd keys)", before, after)
	}
	if got := obtains.Load() - taken; got != 0 {
		t.Errorf("%d locks taken for %d items that do not exist", got, n)
	}
	grew := int64(heapAfter) - int64(heapBefore)
	t.Logf("%d unknown skus over %d locks: state %+v; heap %d KiB -> %d KiB", n, len(names), after, heapBefore>>10, heapAfter>>10)
	if grew > 256<<10 {
		t.Errorf("the heap grew %d KiB over %d unknown skus", grew>>10, n)
	}
}

// countZnodes counts the znodes under p, p included, but ZooKeeper's own
// (/zookeeper).
func countZnodes(t *testing.T, c *zk.Conn, p string) int64 {
	t.Helper()
	children, _, err := c.Children(p)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(1)
	for _, ch := range children {
		cp := path.Join(p, ch)
		if cp == "/zookeeper" {
			continue
		}
		n += countZnodes(t, c, cp)
	}
	return n
}
