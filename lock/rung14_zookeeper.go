package lock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/lockladder/lockladder/internal/line"
)

// ZooKeeper is the lock the articles' factory leaves as a TODO, from the
// other family they name (docs/ladder.md, "Beyond Redis"): ZooKeeper's
// standard recipe, as Curator's InterProcessMutex does it. Each request
// creates an ephemeral sequential znode under the lock's path; the lowest
// holds the lock; every other waits on a watch of its predecessor only (no
// herd: one waiter wakes per release, in the order they came). The znodes
// are ephemeral: a holder whose process dies loses its session, after the
// session timeout, and with it the lock. No TTL to guess, no polling.
// Their parent, the key's znode, is a container: ZooKeeper removes it once
// it is empty, so the keys once locked leave nothing behind.
//
// Every znode it makes is its creator's alone (ZooKeeper's
// CREATOR_ALL_ACL, zk.AuthACL): only a session that carries the same
// credentials (conn.AddAuth("digest", "user:password")) may list, make
// or delete them. With the world's ACL, anyone who reaches the server
// could delete a holder's znode and let the next waiter in. A session
// without credentials cannot make such a znode at all (ErrNoCredentials).
//
// Two details of the recipe keep a ZooKeeper that goes away and comes back
// from stopping the line for good (the backend-restart scenario found
// both): a waiter that gives up deletes its znode until it is gone, not
// once; and a create whose answer never came (the wait ended, the
// connection dropped) is found by an id in the znode's name and deleted,
// as Curator's protected mode does. Otherwise a znode nobody owns stays
// first in line for as long as the session lives.
//
// What it still shows (Curator says so): the session is the lease. A
// holder paused past its session timeout (GC, SIGSTOP) has its znode
// deleted by the server while it still believes it holds the lock; the
// next waiter enters: two holders. Nothing fences the paused one (the
// znode's zxid could serve as a token; this rung does not use it).
//
// One round trip less per handoff than Curator: a waiter whose
// predecessor was the lowest znode takes the lock on that znode's
// deletion without listing the children again, since no sequence number
// below its own can appear any more.
//
// A process's requests for one key wait in a line in memory (localQueue),
// so that ZooKeeper holds one waiting znode per instance, not one per
// request: each waiter lists the lock's children to find its predecessor,
// and with 100 of them in line that list was most of ZooKeeper's work.
type ZooKeeper struct {
	conn  *zk.Conn
	root  string
	wait  time.Duration
	queue line.Queue
}

// ZooKeeperRoot is the znode the locks live under: /lockladder/locks/<key>.
const ZooKeeperRoot = "/lockladder/locks"

// NewZooKeeper returns the znode lock over conn, whose session timeout is
// every holder's lease. Options.Wait bounds a wait; wait modes do not
// apply (a waiter sleeps on its watch).
func NewZooKeeper(conn *zk.Conn, o Options) *ZooKeeper {
	return &ZooKeeper{conn: conn, root: ZooKeeperRoot, wait: o.WithDefaults().Wait}
}

// Obtain waits for the head of this process's line for key, then creates
// our znode and waits, on a watch of the znode just before ours, until
// ours is the lowest; when the wait ends first it deletes ours.
func (z *ZooKeeper) Obtain(ctx context.Context, key string, c Call) (Lock, error) {
	bound := c.Bound(z.wait)
	if bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	t, err := WaitTurn(ctx, &z.queue, key, bound)
	if err != nil {
		return nil, err
	}
	l, err := z.obtain(ctx, key, bound)
	if err != nil {
		t.Leave()
		return nil, err
	}
	l.turn = t
	return l, nil
}

// obtain is Obtain at the head of the line, within ctx's bound.
func (z *ZooKeeper) obtain(ctx context.Context, key string, bound time.Duration) (*zkLock, error) {
	dir := path.Join(z.root, key)
	// Our znode's name carries an id of our own (Curator's protected
	// mode): a create whose answer we never get (the wait ended first,
	// the connection dropped) may still have made it, and a znode nobody
	// owns, left in the line with the session alive, would stop every
	// waiter behind it for good. The id finds it, to delete it.
	id := uuid.NewString()
	made := make(chan createResult, 1)
	go func() {
		node, err := z.createIn(dir, id)
		made <- createResult{node, err}
	}()
	var node string
	select {
	case r := <-made:
		if r.err != nil {
			z.sweep(dir, id)
			return nil, fmt.Errorf("lock: zookeeper: create under %s: %w", dir, r.err)
		}
		node = r.node
	case <-ctx.Done():
		go func() {
			if r := <-made; r.err == nil {
				(&zkLock{conn: z.conn, node: r.node}).giveUp()
			} else {
				z.sweep(dir, id)
			}
		}()
		return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
	}
	held := &zkLock{conn: z.conn, node: node}
	for {
		var (
			pred   string
			lowest bool
		)
		err := bounded(ctx, func() error {
			var err error
			pred, lowest, err = z.predecessor(dir, path.Base(node))
			return err
		})
		switch {
		case err != nil && ctx.Err() != nil:
			held.giveUp()
			return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
		case err != nil:
			held.giveUp()
			return nil, fmt.Errorf("lock: zookeeper: %w", err)
		case pred == "":
			return held, nil // ours is the lowest
		case bound == 0:
			held.giveUp()
			return nil, ErrBusy
		}
		exists, _, watch, err := z.conn.ExistsW(path.Join(dir, pred))
		if err != nil {
			held.giveUp()
			return nil, fmt.Errorf("lock: zookeeper: watch %s: %w", pred, err)
		}
		if !exists {
			continue // gone between the two calls: look again
		}
		select {
		case ev := <-watch:
			// A predecessor that was the lowest, deleted: ours is the
			// lowest now (no lower sequence number can appear), without
			// listing the children again. Otherwise look again.
			if lowest && ev.Type == zk.EventNodeDeleted {
				return held, nil
			}
		case <-ctx.Done():
			held.giveUp()
			return nil, fmt.Errorf("%w: waited %s: %w", ErrNotObtained, bound, ctx.Err())
		}
	}
}

// ErrNoCredentials: the ZooKeeper session carries no credentials, so it
// cannot make a znode only its creator may touch.
var ErrNoCredentials = errors.New("the ZooKeeper session has no credentials (conn.AddAuth(\"digest\", \"user:password\"))")

type createResult struct {
	node string
	err  error
}

// createIn creates our ephemeral sequential znode under dir, named with
// id, creating dir first when it is missing.
//
// dir, the key's znode, is a container, as Curator makes a lock's parent
// (creatingParentContainersIfNeeded): ZooKeeper deletes it some time
// after its last child is gone, so a key nobody locks any more leaves
// nothing behind. Deleted between our look and our create, it is made
// again.
func (z *ZooKeeper) createIn(dir, id string) (node string, err error) {
	defer func() {
		if errors.Is(err, zk.ErrInvalidACL) {
			err = fmt.Errorf("%w: %w", ErrNoCredentials, err)
		}
	}()
	acl := zk.AuthACL(zk.PermAll) // the creator's credentials alone
	for range 3 {
		node, err := z.conn.Create(dir+"/lock-"+id+"-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if !errors.Is(err, zk.ErrNoNode) {
			return node, err
		}
		_, err = z.conn.CreateContainer(dir, nil, zk.FlagContainer, acl)
		if errors.Is(err, zk.ErrNoNode) { // the root too: made once, for good
			p := ""
			for _, part := range strings.Split(strings.Trim(path.Dir(dir), "/"), "/") {
				p += "/" + part
				if _, err := z.conn.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
					return "", err
				}
			}
			_, err = z.conn.CreateContainer(dir, nil, zk.FlagContainer, acl)
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s vanished three times", dir)
}

// predecessor returns the znode just before ours in dir, "" when ours is
// the lowest, and whether the predecessor is the lowest.
func (z *ZooKeeper) predecessor(dir, ours string) (pred string, lowest bool, err error) {
	children, _, err := z.conn.Children(dir)
	if err != nil {
		return "", false, err
	}
	slices.SortFunc(children, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
	i := slices.Index(children, ours)
	if i < 0 {
		return "", false, fmt.Errorf("our znode %s is gone (the session expired)", ours)
	}
	if i == 0 {
		return "", false, nil
	}
	return children[i-1], i == 1, nil
}

// seq is a sequential znode's sequence number, zero-padded by ZooKeeper so
// that it sorts as a string.
func seq(name string) string { return name[max(0, len(name)-10):] }

// bounded runs f (a ZooKeeper call, which takes no context) and returns
// its error, or ctx's when ctx ends first; f then finishes on its own.
func bounded(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type zkLock struct {
	conn *zk.Conn
	node string
	turn *line.Turn // this process's line: the next request goes once we release
}

// Release deletes our znode: the next waiter's watch fires. ErrNotHeld when
// it was gone (the session expired: someone else may hold the lock).
//
// A delete that fails (ZooKeeper unreachable) is retried in the background
// until the znode is gone: left behind with the session alive, it would
// hold the lock for nobody, for good.
func (l *zkLock) Release(context.Context) error {
	defer l.turn.Leave()
	err := l.conn.Delete(l.node, -1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrNotHeld
	case err != nil:
		l.giveUp()
		return fmt.Errorf("lock: zookeeper: delete %s (retrying in the background): %w", l.node, err)
	}
	return nil
}

// giveUp deletes our znode after a failed wait, in the background, and
// keeps trying while ZooKeeper is unreachable (Curator's guaranteed
// delete): its successor's watch fires. Only the session's end, which
// takes the znode with it, or a closed connection ends the tries.
func (l *zkLock) giveUp() {
	go retryGone(l.conn, func() (bool, error) {
		err := l.conn.Delete(l.node, -1)
		return err == nil || errors.Is(err, zk.ErrNoNode), err
	})
}

// sweep deletes, in the background, the znode a create under dir may have
// made with id although its caller never learnt its name.
func (z *ZooKeeper) sweep(dir, id string) {
	go retryGone(z.conn, func() (bool, error) {
		children, _, err := z.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		for _, c := range children {
			if strings.Contains(c, id) {
				if err := z.conn.Delete(path.Join(dir, c), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
					return false, err
				}
			}
		}
		return true, nil
	})
}

// retryGone calls try until it reports done, pausing 50ms doubling to 1s
// between tries, and gives up when the session or the connection ends
// (the ephemeral znodes go with the session), or after ten minutes.
func retryGone(conn *zk.Conn, try func() (done bool, err error)) {
	end := time.Now().Add(10 * time.Minute)
	for pause := 50 * time.Millisecond; time.Now().Before(end); pause = min(2*pause, time.Second) {
		done, err := try()
		if done || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) {
			return
		}
		time.Sleep(pause)
	}
}
