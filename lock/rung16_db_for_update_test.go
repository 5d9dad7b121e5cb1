package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
)

// TestDBForUpdateExcludesAndQueues: the row lock is exact under
// contention, refuses at once with try=0 (NOWAIT), gives up at its bound,
// and frees the row at the commit.
func TestDBForUpdateExcludesAndQueues(t *testing.T) {
	rdb, _ := redistest.Start(t)
	db := servertest.MariaDB(t)
	ctx := context.Background()
	// The Locker's own bound is an hour: contenders wait as long as it
	// takes, and a try that ignored its bound would not give up.
	l, err := lock.NewDBForUpdate(ctx, db, lock.Options{Wait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	contend(t, rdb, l, lock.Call{}, "n:db", 10, 20)

	held, err := l.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	locktest.Refuses(t, l, "lock:k", 300*time.Millisecond, time.Hour)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := l.Obtain(ctx, "lock:k", lock.Call{Try: dur(0)})
	if err != nil {
		t.Fatalf("after the commit: %v", err)
	}
	again.Release(ctx)
}

// A wait given up on the client side ends on the server too: no
// transaction is left waiting for the row in InnoDB, to be handed it when
// the holder commits (and to keep it until the server sees its client
// gone).
func TestDBForUpdateGiveUpLeavesNoWaitOnTheServer(t *testing.T) {
	db := servertest.MariaDB(t)
	ctx := context.Background()
	l, err := lock.NewDBForUpdate(ctx, db, lock.Options{Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held, err := l.Obtain(ctx, "lock:ghost", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := l.Obtain(ctx, "lock:ghost", lock.Call{Try: dur(300 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a 300ms try while held: %v, want ErrNotObtained", err)
	}
	var waiting int
	// Without the statement's own bound the wait stays queued for
	// innodb_lock_wait_timeout, an hour on the stack's server: 30s tells
	// the two apart with room for any loaded machine (3s ran out under
	// make test's load, with the server's kill of the statement late).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if waiting != 0 {
		t.Errorf("%d transactions still wait for a lock on the server after the client gave up", waiting)
	}
}

// Every holder and waiter keeps a connection of the pool: a request that
// finds none free waits for one within its bound, as for the row, and
// gives up with ErrNotObtained, whether it needs the connection for the
// row lock or to make the lock row first.
func TestDBForUpdateWaitsForAConnectionWithinItsBound(t *testing.T) {
	db := servertest.MariaDB(t)
	ctx := context.Background()
	// The Locker's own bound is an hour: a try that ignored its 200ms
	// would not give up.
	l, err := lock.NewDBForUpdate(ctx, db, lock.Options{Wait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	known, err := l.Obtain(ctx, "lock:known", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	known.Release(ctx)
	db.SetMaxOpenConns(1)
	held, err := l.Obtain(ctx, "lock:a", lock.Call{}) // the pool's one connection
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"lock:known", "lock:new"} {
		start := time.Now()
		_, err := l.Obtain(ctx, key, lock.Call{Try: dur(200 * time.Millisecond)})
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("%s with the pool's one connection held: %v, want ErrNotObtained", key, err)
		}
		if took := time.Since(start); took < 200*time.Millisecond {
			t.Errorf("%s: gave up after %s, want 200ms or more", key, took)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := l.Obtain(ctx, "lock:new", lock.Call{Try: dur(time.Second)})
	if err != nil {
		t.Fatalf("with the connection back: %v", err)
	}
	again.Release(ctx)
}
