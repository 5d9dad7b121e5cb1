package lock_test

import (
	"context"
	"errors"
	"path"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// TestLocalForgetsIdleKeys: every key's monitor is forgotten once nobody
// holds it or waits for it: after 10,000 keys taken once, a re-entry, a
// busy try and a wait that ran out, it keeps none.
func TestLocalForgetsIdleKeys(t *testing.T) {
	ctx := context.Background()
	l := lock.NewLocal(fast)
	for i := range 10_000 {
		h, err := l.Obtain(ctx, "lock:"+strconv.Itoa(i), lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		h.Release(ctx)
	}
	outer, err := l.Obtain(ctx, "k", lock.Call{Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Obtain(ctx, "k", lock.Call{Owner: "me"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Obtain(ctx, "k", lock.Call{Try: dur(0)}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("try=0 while held: %v", err)
	}
	if _, err := l.Obtain(ctx, "k", lock.Call{Try: dur(10 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a 10ms try while held: %v", err)
	}
	if n := l.Keys(); n != 1 {
		t.Errorf("%d monitors while one key is held, want 1", n)
	}
	inner.Release(ctx)
	outer.Release(ctx)
	if n := l.Keys(); n != 0 {
		t.Errorf("%d monitors kept once every key is free, want 0", n)
	}
	// Contention, then idle: still exact, nothing kept.
	var wg sync.WaitGroup
	n := 0
	for range 20 {
		wg.Go(func() {
			for range 50 {
				h, err := l.Obtain(ctx, "k", lock.Call{Try: dur(5 * time.Second)})
				if err != nil {
					t.Error(err)
					return
				}
				n++
				h.Release(ctx)
			}
		})
	}
	wg.Wait()
	if n != 1000 || l.Keys() != 0 {
		t.Errorf("%d sections of 1000 under contention, %d monitors kept after", n, l.Keys())
	}
}

// TestCohortForgetsIdleLines: a cohort's line in memory is forgotten once
// its last request hands on to nobody, for cohort without its speed and
// with it (package speed's pipe, which cohort-carry runs on too).
func TestCohortForgetsIdleLines(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	o := locktest.FairOpts(notifier(t, rdb, notify.Options{}))
	c, cc := lock.NewCohort(rdb, o, 0), speed.NewCohort(rdb, o, 0)
	for _, l := range []interface {
		lock.Locker
		Lines() int
	}{c, cc} {
		for i := range 500 {
			h, err := l.Obtain(ctx, "lock:"+strconv.Itoa(i), lock.Call{})
			if err != nil {
				t.Fatal(err)
			}
			h.Release(ctx)
		}
		if n := l.Lines(); n != 0 {
			t.Errorf("%T: %d lines kept after 500 keys taken once, want 0", l, n)
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for range 20 {
					h, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(5 * time.Second)})
					if err != nil {
						t.Error(err)
						return
					}
					h.Release(ctx)
				}
			})
		}
		wg.Wait()
		if n := l.Lines(); n != 0 {
			t.Errorf("%T: %d lines kept after contention, want 0", l, n)
		}
		// The next cohort on a forgotten line still takes the lock in
		// Redis and gets a larger token.
		a, err := l.Obtain(ctx, "lock:k", lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		first := locktest.TokenOf(t, a)
		a.Release(ctx)
		b, err := l.Obtain(ctx, "lock:k", lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		if locktest.TokenOf(t, b) <= first {
			t.Errorf("%T: token %s after %s on a new line, want larger", l, locktest.Dotted(locktest.TokenOf(t, b)), locktest.Dotted(first))
		}
		b.Release(ctx)
	}
}

// TestDBForUpdateRemembersBoundedRows: the rows a process remembers it
// inserted are at most MaxKnownRows; a row forgotten is inserted again
// (INSERT IGNORE) and locks as before.
func TestDBForUpdateRemembersBoundedRows(t *testing.T) {
	db := servertest.MariaDB(t)
	ctx := context.Background()
	d, err := lock.NewDBForUpdate(ctx, db, lock.Options{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range lock.MaxKnownRows + 10 {
		if err := d.EnsureRow(ctx, "lock:"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.Known(); n > lock.MaxKnownRows || n == 0 {
		t.Errorf("%d rows remembered, want 1 to %d", n, lock.MaxKnownRows)
	}
	h, err := d.Obtain(ctx, "lock:0", lock.Call{})
	if err != nil {
		t.Fatalf("a forgotten row: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestZooKeeperKeyZnodeIsAContainer: a key's znode, the parent of its
// lock's znodes, is a container: ZooKeeper deletes it once its last child
// is gone (checked here every 100ms, not every minute), and the next
// lock on the key makes it again. The root stays.
func TestZooKeeperKeyZnodeIsAContainer(t *testing.T) {
	// The server inherits the environment: its JVM reads this.
	t.Setenv("JAVA_TOOL_OPTIONS", "-Dznode.container.checkIntervalMs=100")
	conn, _ := servertest.ZooKeeper(t, 2*time.Second)
	ctx := context.Background()
	z := lock.NewZooKeeper(conn, lock.Options{Wait: 5 * time.Second})
	const key = "lock:{item:1}:stock"
	dir := path.Join(lock.ZooKeeperRoot, key)
	for i := range 2 {
		h, err := z.Obtain(ctx, key, lock.Call{})
		if err != nil {
			t.Fatalf("take %d: %v", i, err)
		}
		time.Sleep(300 * time.Millisecond) // a reaper's round or more: a container with a child stays
		if ok, _, err := conn.Exists(dir); !ok || err != nil {
			t.Fatalf("take %d: %s while held: exists %v %v", i, dir, ok, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			ok, _, err := conn.Exists(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("take %d: %s still there 5s after its last child went: not a container", i, dir)
			}
		}
	}
	if ok, _, err := conn.Exists(lock.ZooKeeperRoot); !ok || err != nil {
		t.Errorf("%s: exists %v %v, want it kept", lock.ZooKeeperRoot, ok, err)
	}
}
