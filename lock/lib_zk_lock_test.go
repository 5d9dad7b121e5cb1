package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
)

func TestLibZKLockBasics(t *testing.T) {
	rdb, _ := redistest.Start(t)
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	o := lock.Options{Wait: 20 * time.Second}
	libBasics(t, rdb, lock.NewZKLock(a, o), lock.NewZKLock(b, o), "zk-lock", 5, 10)
}

// TestLibZKLockGivenUpWaiterPassesItOn: Lock takes no context, so the
// rung stops waiting for it at the bound while it goes on waiting; when
// its turn comes it takes the lock and unlocks at once, and the waiter
// behind it gets the lock.
func TestLibZKLockGivenUpWaiterPassesItOn(t *testing.T) {
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	c := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	ctx := context.Background()
	o := lock.Options{Wait: 10 * time.Second}
	held, err := lock.NewZKLock(a, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := lock.NewZKLock(b, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(200 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a 200ms try while held: %v, want ErrNotObtained", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the bounded waiter returned after %s", took)
	}
	got := make(chan error, 1)
	go func() {
		l, err := lock.NewZKLock(c, o).Obtain(ctx, "lock:k", lock.Call{})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the last waiter got the lock while the first held it (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the last waiter never got the lock: the given-up Lock did not pass it on")
	}
}

// TestLibZKLockDeadSessionFreesTheLock: a holder whose session ends loses
// its ephemeral znode, and the waiter's watch hands it the lock.
func TestLibZKLockDeadSessionFreesTheLock(t *testing.T) {
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	ctx := context.Background()
	o := lock.Options{Wait: 10 * time.Second}
	if _, err := lock.NewZKLock(a, o).Obtain(ctx, "lock:k", lock.Call{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := lock.NewZKLock(b, o).Obtain(ctx, "lock:k", lock.Call{})
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	a.Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the holder's session ended: %v", err)
	}
}
