package handlers_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

// TestServerMissing: a rung whose server this instance lacks answers 503
// server_missing naming the server, for /sale, /testLock and its /stock,
// and changes nothing; bad input is still a 400 first.
func TestServerMissing(t *testing.T) {
	e := newEnv(t)
	e.do(t, "POST", "/reset?stock=5")
	before := e.mr.Dump()
	for rung, server := range map[string]string{"redlock": "-masters", "zookeeper": "zookeeper", "etcd": "etcd",
		"db-for-update": "mariadb", "db-optimistic": "mariadb"} {
		for _, target := range []string{"/sale?lock=" + rung, "/testLock?lock=" + rung} {
			code, _, body := e.do(t, "POST", target)
			msg, _ := body["error"].(string)
			if code != 503 || body["reason"] != "server_missing" || !strings.Contains(msg, server) {
				t.Errorf("%s: %d %v, want 503 server_missing naming %s", target, code, body, server)
			}
		}
		if code, _, body := e.do(t, "POST", "/sale?lock="+rung+"&try=never"); code != 400 {
			t.Errorf("%s with a bad try=: %d %v, want 400", rung, code, body)
		}
	}
	if after := e.mr.Dump(); after != before {
		t.Fatalf("Redis changed:\nbefore %s\nafter  %s", before, after)
	}
	// /stock reads the lock's store: Redis's for a lock over another
	// server, none for db-optimistic without its database.
	if code, _, body := e.do(t, "GET", "/stock?lock=zookeeper"); code != 200 || body["stock"] != 5.0 {
		t.Errorf("/stock?lock=zookeeper: %d %v, want Redis's stock 5", code, body)
	}
	if code, _, body := e.do(t, "GET", "/stock?lock=db-optimistic"); code != 503 || body["reason"] != "server_missing" {
		t.Errorf("/stock?lock=db-optimistic without a database: %d %v, want 503 server_missing", code, body)
	}
	if code, _, body := e.do(t, "GET", "/stock?lock=nope"); code != 400 {
		t.Errorf("/stock?lock=nope: %d %v, want 400", code, body)
	}
}

// TestOptimisticStore: db-optimistic sells from, and /stock?lock= reads,
// the database's store; /reset resets it with Redis's; a sale that lost
// every compare-and-set is a 503 contended.
func TestOptimisticStore(t *testing.T) {
	db := &fakeDB{}
	e := newEnvConfig(t, func(c *handlers.Config) { c.Optimistic = db })
	// Without -mysql the rung is marked unavailable; this router has a
	// store but the ladder (over Redis alone) still says so.
	if code, _, _ := e.do(t, "POST", "/sale?lock=db-optimistic"); code != 503 {
		t.Fatalf("db-optimistic on a ladder without a database: %d, want 503", code)
	}
	e = newEnvConfig(t, func(c *handlers.Config) {
		c.Optimistic = db
		c.Ladder = withDB{c.Ladder}
	})
	e.do(t, "POST", "/reset?stock=2")
	for i, want := range []int{200, 200, 409} {
		if code, _, body := e.do(t, "POST", "/sale?lock=db-optimistic"); code != want {
			t.Fatalf("sale %d: %d %v, want %d", i, code, body, want)
		}
	}
	// How it waits reaches the store: its line by default, wait=backoff
	// on its own; a wait mode it has not is a 400 that changes nothing.
	e.do(t, "POST", "/reset?stock=2")
	db.lines = nil
	for _, q := range []string{"", "&wait=queue", "&wait=backoff"} {
		if code, _, body := e.do(t, "POST", "/sale?lock=db-optimistic"+q); code != 200 && code != 409 {
			t.Fatalf("sale%s: %d %v", q, code, body)
		}
	}
	if want := []bool{true, true, false}; !slices.Equal(db.lines, want) {
		t.Errorf("the store was asked to wait in its line: %v, want %v", db.lines, want)
	}
	if code, _, body := e.do(t, "POST", "/testLock?lock=db-optimistic&wait=fixed"); code != 400 || db.s.Num != 0 || len(db.lines) != 3 {
		t.Errorf("wait=fixed: %d %v (num %d, %d calls), want a 400 that reaches no store", code, body, db.s.Num, len(db.lines))
	}
	if code, _, body := e.do(t, "GET", "/stock?lock=db-optimistic"); code != 200 || body["stock"] != 0.0 || body["sold"] != 2.0 {
		t.Fatalf("/stock?lock=db-optimistic: %d %v, want stock 0 sold 2", code, body)
	}
	if code, _, body := e.do(t, "GET", "/stock?lock=lua"); code != 200 || body["stock"] != 2.0 || body["sold"] != 0.0 {
		t.Fatalf("/stock?lock=lua: %d %v, want Redis's untouched stock 2", code, body)
	}
	db.contended = true
	if code, _, body := e.do(t, "POST", "/testLock?lock=db-optimistic"); code != 503 || body["reason"] != "contended" {
		t.Fatalf("contended: %d %v, want 503 contended", code, body)
	}
}

// withDB is a ladder whose db-optimistic rung has its database.
type withDB struct{ handlers.Ladder }

func (l withDB) Lookup(name string) (info lock.Info, locker lock.Locker, ok bool) {
	info, locker, ok = l.Ladder.Lookup(name)
	if name == "db-optimistic" {
		info.Unavailable = ""
	}
	return info, locker, ok
}

// fakeDB is an in-memory Optimistic: the lab's row (s) and the runs'.
type fakeDB struct {
	mu        sync.Mutex
	s         inventory.Snapshot
	runs      map[string]*inventory.Snapshot
	contended bool
	lines     []bool // each call's: in the process's line, or on its own
}

// row is scope's row, made when make is set; nil when there is none.
func (f *fakeDB) row(scope string, make bool) *inventory.Snapshot {
	if scope == "" {
		return &f.s
	}
	if f.runs == nil {
		f.runs = map[string]*inventory.Snapshot{}
	}
	if f.runs[scope] == nil && make {
		f.runs[scope] = &inventory.Snapshot{}
	}
	return f.runs[scope]
}

func (f *fakeDB) SellOptimistic(_ context.Context, scope string, line bool) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, line)
	s := f.row(scope, false)
	switch {
	case s == nil:
		return 0, errors.New("no row")
	case f.contended:
		return 0, inventory.ErrContended
	case s.Stock <= 0:
		return 0, inventory.ErrSoldOut
	}
	s.Stock--
	s.Sold++
	return s.Stock, nil
}

func (f *fakeDB) IncrOptimistic(_ context.Context, scope string, line bool) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, line)
	s := f.row(scope, false)
	switch {
	case s == nil:
		return 0, errors.New("no row")
	case f.contended:
		return 0, inventory.ErrContended
	}
	s.Num++
	return s.Num, nil
}

func (f *fakeDB) Snapshot(_ context.Context, scope string) (inventory.Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.row(scope, false)
	if s == nil {
		return inventory.Snapshot{}, errors.New("no row")
	}
	return *s, nil
}

func (f *fakeDB) Reset(_ context.Context, scope string, stock int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.row(scope, true) = inventory.Snapshot{Stock: stock}
	return nil
}

func (f *fakeDB) Drop(_ context.Context, scopes ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, scope := range scopes {
		delete(f.runs, scope)
	}
	return nil
}
