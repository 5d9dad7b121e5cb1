package libs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/internal/servertest"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
	"github.com/lockladder/lockladder/stack/faultproxy"
)

func TestLibZKLockBasics(t *testing.T) {
	rdb, _ := redistest.Start(t)
	a, addr := servertest.ZooKeeper(t, 2*time.Second)
	b := servertest.ZooKeeperSession(t, addr, 2*time.Second)
	o := lock.Options{Wait: 20 * time.Second}
	libBasics(t, rdb, libs.NewZKLock(a, o), libs.NewZKLock(b, o), "zk-lock", 5, 10)
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
	held, err := libs.NewZKLock(a, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := libs.NewZKLock(b, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(200 * time.Millisecond)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a 200ms try while held: %v, want ErrNotObtained", err)
	}
	if took := time.Since(start); took >= o.Wait {
		t.Errorf("the bounded waiter returned after %s: the Locker's bound, not its own", took)
	}
	got := make(chan error, 1)
	go func() {
		l, err := libs.NewZKLock(c, o).Obtain(ctx, "lock:k", lock.Call{})
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
	if _, err := libs.NewZKLock(a, o).Obtain(ctx, "lock:k", lock.Call{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := libs.NewZKLock(b, o).Obtain(ctx, "lock:k", lock.Call{})
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	a.Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the holder's session ended: %v", err)
	}
}

// TestLibZKLockFailedUnlockHoldsTheLockForever is what backend-restart
// found (docs/libraries.md): Unlock is one Delete. When it fails (here
// the holder's connection is cut, as a ZooKeeper restart cuts it) the
// znode stays, the session comes back with the connection and keeps it
// alive, and every later waiter waits for a lock nobody holds. The
// library says nothing of retrying Unlock; the lab's zookeeper rung
// deletes until the znode is gone.
func TestLibZKLockFailedUnlockHoldsTheLockForever(t *testing.T) {
	// Long enough that the client, which gives a silent connection up
	// after two thirds of it, reconnects before the server ends the
	// session (it would then delete the znode, and free the lock).
	const session = 9 * time.Second
	_, addr := servertest.ZooKeeper(t, session)
	host, user, password := backend.ParseZooKeeper(addr)
	p, err := faultproxy.New(host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := servertest.ZooKeeperSession(t, backend.ZooKeeperAddr(p.Addr(), user, password), session)
	b := servertest.ZooKeeperSession(t, addr, session)
	ctx := context.Background()
	o := lock.Options{Wait: 20 * time.Second}
	held, err := libs.NewZKLock(a, o).Obtain(ctx, "lock:k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	err = held.Release(ctx) // fails once the client gives up on the connection
	p.Heal()
	if err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("Unlock over a cut connection: %v, want a connection error", err)
	}
	t.Logf("Unlock over a cut connection: %v", err)
	deadline := time.Now().Add(session)
	for a.State() != zk.StateHasSession && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if a.State() != zk.StateHasSession {
		t.Fatalf("the holder's session did not come back: %s", a.State())
	}
	children, _, err := b.Children(libs.ZKLockRoot + "/lock:k")
	if err != nil || len(children) != 1 {
		t.Fatalf("znodes left in line: %v, %v; want the failed Unlock's", children, err)
	}
	// A session's timeout later the znode is still first in line.
	if _, err := libs.NewZKLock(b, o).Obtain(ctx, "lock:k", lock.Call{Try: dur(session + time.Second)}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a waiter after the failed Unlock: %v, want ErrNotObtained: the lock held by nobody, for the session's life", err)
	}
}
