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

// TestZooKeeperExcludesAndQueues: the znode lock is exact under
// contention from two sessions (two processes), refuses at once with
// try=0, and gives up at its bound.
func TestZooKeeperExcludesAndQueues(t *testing.T) {
	rdb, _ := redistest.Start(t)
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	// The Lockers' own bound is an hour: contenders wait as long as it
	// takes, and a try that ignored its bound would not give up.
	o := lock.Options{Wait: time.Hour}
	la, lb := lock.NewZooKeeper(a, o), lock.NewZooKeeper(b, o)
	contend(t, rdb, locktest.Alternate{la, lb}, lock.Call{}, "n:zk", 10, 20)

	ctx := context.Background()
	held, err := la.Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	locktest.Refuses(t, lb, "lock:k", 100*time.Millisecond, o.Wait)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("a second release: %v, want ErrNotHeld", err)
	}
}

// TestZooKeeperDeadSessionFreesTheLock: a holder whose session ends (its
// process died) loses its ephemeral znode, and the waiter's watch hands it
// the lock.
func TestZooKeeperDeadSessionFreesTheLock(t *testing.T) {
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	ctx := context.Background()
	o := lock.Options{Wait: 10 * time.Second}
	if _, err := lock.NewZooKeeper(a, o).Obtain(ctx, "lock:k", lock.Call{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := lock.NewZooKeeper(b, o).Obtain(ctx, "lock:k", lock.Call{})
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // b waits on its watch
	died := time.Now()
	a.Close() // the holder's process is gone: its session ends
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the holder's session ended: %v", err)
	}
	t.Logf("the waiter held the lock %s after the holder's session ended", time.Since(died).Round(time.Millisecond))
}

// TestZooKeeperWaiterBehindAGivenUpOneWaits: a waiter takes the lock on
// its predecessor's deletion without listing the znodes again only when
// the predecessor was the lowest. Here the predecessor is a waiter that
// gives up, not the holder: the one behind it must go on waiting for the
// holder, then get the lock on the holder's release.
func TestZooKeeperWaiterBehindAGivenUpOneWaits(t *testing.T) {
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	c := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	ctx := context.Background()
	o := lock.Options{Wait: 10 * time.Second}
	held, err := lock.NewZooKeeper(a, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := make(chan error, 1)
	go func() {
		_, err := lock.NewZooKeeper(b, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(300 * time.Millisecond)})
		gaveUp <- err
	}()
	time.Sleep(100 * time.Millisecond) // b's znode is in line before c's
	got := make(chan error, 1)
	go func() {
		l, err := lock.NewZooKeeper(c, o).Obtain(ctx, "lock:k", lock.Call{})
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	if err := <-gaveUp; !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("the middle waiter: %v, want ErrNotObtained", err)
	}
	select {
	case err := <-got:
		t.Fatalf("the last waiter got the lock while the first still held it (%v)", err)
	case <-time.After(500 * time.Millisecond):
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
		t.Fatal("the last waiter never got the lock after the release")
	}
}
