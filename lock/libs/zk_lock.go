package libs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/lockladder/lockladder/lock"
)

// ZKLock is github.com/go-zookeeper/zk v1.0.4's Lock as shipped, called
// as its godoc shows, a library rung beside the lab's zookeeper rung (rung
// 14, the same recipe): NewLock(conn, path, acl), Lock, the business,
// Unlock. The godoc's acl is WorldACL(PermAll), which lets anyone who
// reaches the server delete a holder's znode; this rung passes
// AuthACL(PermAll) (ZooKeeper's CREATOR_ALL_ACL): the znodes are the
// creator's credentials' alone (the session's AddAuth). Lock creates a protected ephemeral sequential znode,
// lists the children, and waits on a watch of the next lower one; the
// lowest holds. The session (the process's, its timeout the lab's lease)
// is the lease.
//
// What it shows: as rung 14, a holder paused past its session loses its
// znode while it believes it holds the lock, the next waiter enters, and
// nothing fences the paused one's late write.
//
// What it costs: Lock takes no context and no timeout, and the library
// has no TryLock. This rung bounds the wait from outside: Lock runs in a
// goroutine the request stops waiting for at its bound (lock.ErrNotObtained).
// The goroutine cannot withdraw: its znode keeps its place in line, and
// when its turn comes it takes the lock and unlocks it at once, so a
// waiter that gave up still costs the line a round trip or three. A Lock
// that fails after creating its znode (the connection lost while it
// listed the children or watched) leaves that znode in line for as long
// as the session lives: the library does not say which znode it created.
// try=0 looks first (one Children call): a lock path with any znode
// under it is busy; an empty one is taken within the ordinary bound.
type ZKLock struct {
	conn *zk.Conn
	wait time.Duration
}

// ZKLockRoot is the znode the library's locks live under: /lockladder/zk-lock/<key>.
const ZKLockRoot = "/lockladder/zk-lock"

var _ lock.Locker = (*ZKLock)(nil)

// NewZKLock returns the library's lock over conn, whose session timeout
// is every holder's lease; lock.Options.Wait bounds a wait.
func NewZKLock(conn *zk.Conn, o lock.Options) *ZKLock {
	return &ZKLock{conn: conn, wait: o.WithDefaults().Wait}
}

// Obtain runs the library's Lock, waiting for it up to the call's bound.
func (z *ZKLock) Obtain(ctx context.Context, key string, c lock.Call) (lock.Lock, error) {
	p := path.Join(ZKLockRoot, key)
	bound := z.wait
	if c.Try != nil {
		bound = max(*c.Try, 0)
	}
	if bound == 0 {
		children, _, err := z.conn.Children(p)
		switch {
		case err != nil && !errors.Is(err, zk.ErrNoNode):
			return nil, fmt.Errorf("lock: zk-lock: children of %s: %w", p, err)
		case len(children) > 0:
			return nil, fmt.Errorf("%w: zk-lock: %d znodes under %s", lock.ErrBusy, len(children), p)
		}
		bound = z.wait
	}
	l := zk.NewLock(z.conn, p, zk.AuthACL(zk.PermAll))
	got := make(chan error, 1)
	var mu sync.Mutex
	gaveUp := false
	go func() {
		err := l.Lock()
		mu.Lock()
		defer mu.Unlock()
		if gaveUp {
			if err == nil {
				l.Unlock() // our turn came after the request left: pass it on
			}
			return
		}
		got <- err
	}()
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	select {
	case err := <-got:
		if err != nil {
			return nil, zkLockErr(p, err)
		}
		return &zkLockHeld{l: l}, nil
	case <-wctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case err := <-got: // Lock returned as the bound passed
		if err == nil {
			return &zkLockHeld{l: l}, nil
		}
		return nil, zkLockErr(p, err)
	default:
	}
	gaveUp = true
	return nil, fmt.Errorf("%w: zk-lock: waited %s: %w (Lock still waits, and unlocks when its turn comes)", lock.ErrNotObtained, bound, wctx.Err())
}

// zkLockErr is Lock's error on path p. A session without credentials
// cannot make a znode only its creator may touch (the server says
// invalid ACL): lock.ErrNoCredentials, as for rung 14.
func zkLockErr(p string, err error) error {
	if errors.Is(err, zk.ErrInvalidACL) {
		return fmt.Errorf("lock: zk-lock: lock %s: %w: %w", p, lock.ErrNoCredentials, err)
	}
	return fmt.Errorf("lock: zk-lock: lock %s: %w", p, err)
}

type zkLockHeld struct {
	l    *zk.Lock
	once sync.Once
}

// Release calls Unlock: lock.ErrNotHeld when our znode is gone (the session
// expired) or the lock was already released.
func (h *zkLockHeld) Release(context.Context) error {
	err := lock.ErrNotHeld
	h.once.Do(func() {
		switch uerr := h.l.Unlock(); {
		case uerr == nil:
			err = nil
		case errors.Is(uerr, zk.ErrNoNode) || errors.Is(uerr, zk.ErrNotLocked):
			err = fmt.Errorf("%w: zk-lock: %w", lock.ErrNotHeld, uerr)
		default:
			err = fmt.Errorf("lock: zk-lock: unlock: %w", uerr)
		}
	})
	return err
}
