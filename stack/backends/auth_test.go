package backends

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/internal/backend"
	"github.com/lockladder/lockladder/internal/need"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
	"github.com/lockladder/lockladder/stack/proc"
)

func launchZooKeeper(t *testing.T) *ZooKeeper {
	java, jar, err := FindZooKeeper()
	need.Real(t, "zookeeper", err)
	return launch(t, NewZooKeeper(java, jar, "127.0.0.1", t.TempDir(), t.TempDir(), proc.NewLogger(nil)))
}

func zkSession(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := backend.ZooKeeper(ctx, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// The stack's ZooKeeper lets only its user near the lab's znodes: a
// session without the password, or with a wrong one, can neither list
// nor read, make nor delete a znode, the held locks' of both rungs
// (zookeeper, zk-lock) included, nor make one anywhere, nor change an
// ACL; the lab's locks are still held afterwards.
func TestZooKeeperLetsInOnlyItsUser(t *testing.T) {
	z := launchZooKeeper(t)
	lab := zkSession(t, z.ClientAddr())
	ctx := context.Background()
	o := lock.Options{Wait: 5 * time.Second}
	held, err := lock.NewZooKeeper(lab, o).Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	libHeld, err := libs.NewZKLock(lab, o).Obtain(ctx, "k", lock.Call{})
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string // the held locks' znodes
	for _, dir := range []string{lock.ZooKeeperRoot + "/k", libs.ZKLockRoot + "/k"} {
		children, _, err := lab.Children(dir)
		if err != nil || len(children) != 1 {
			t.Fatalf("the lab's session lists %s: %v, %v; want its one znode", dir, children, err)
		}
		nodes = append(nodes, path.Join(dir, children[0]))
	}
	acl, _, err := lab.GetACL(nodes[0])
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, ZooKeeperUser+":") {
		t.Errorf("a held lock's ACL: %+v, %v; want the digest of %s alone", acl, err, ZooKeeperUser)
	}

	for name, addr := range map[string]string{
		"no password":    z.Addr(),
		"wrong password": backend.ZooKeeperAddr(z.Addr(), ZooKeeperUser, NewPassword()),
	} {
		s := zkSession(t, addr)
		tries := map[string]func() error{
			"list /": func() error { _, _, err := s.Children("/"); return err },
			"make /x": func() error {
				_, err := s.Create("/x", nil, 0, zk.WorldACL(zk.PermAll))
				return err
			},
			"change /'s ACL": func() error { _, err := s.SetACL("/", zk.WorldACL(zk.PermAll), -1); return err },
		}
		for _, n := range nodes {
			dir := path.Dir(n)
			tries["list "+dir] = func() error { _, _, err := s.Children(dir); return err }
			tries["read "+n] = func() error { _, _, err := s.Get(n); return err }
			tries["delete "+n] = func() error { return s.Delete(n, -1) }
			tries["make a znode in "+dir] = func() error {
				_, err := s.Create(dir+"/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
				return err
			}
			tries["change "+n+"'s ACL"] = func() error { _, err := s.SetACL(n, zk.WorldACL(zk.PermAll), -1); return err }
		}
		for what, try := range tries {
			if err := try(); !errors.Is(err, zk.ErrNoAuth) {
				t.Errorf("%s: %s: %v, want %v", name, what, err, zk.ErrNoAuth)
			}
		}
		if l, err := lock.NewZooKeeper(s, lock.Options{Wait: time.Second}).Obtain(ctx, "k", lock.Call{}); err == nil {
			l.Release(ctx)
			t.Errorf("%s: took the zookeeper rung's lock held by the lab", name)
		}
	}
	if err := held.Release(ctx); err != nil {
		t.Errorf("the lab's zookeeper lock after the strangers: %v", err)
	}
	if err := libHeld.Release(ctx); err != nil {
		t.Errorf("the lab's zk-lock after the strangers: %v", err)
	}
}

// A session without credentials cannot make the rungs' znodes at all,
// the lab's rung's nor the library's: they are their creator's, and it
// has none to give them.
func TestZooKeeperRungNeedsCredentials(t *testing.T) {
	z := launchZooKeeper(t)
	// A ZooKeeper of the engineer's own, its root open to all.
	lab := zkSession(t, z.ClientAddr())
	ctx := context.Background()
	if _, err := lab.SetACL("/", zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	anon := zkSession(t, z.Addr())
	_, err := lock.NewZooKeeper(anon, lock.Options{}).Obtain(ctx, "k2", lock.Call{})
	if !errors.Is(err, lock.ErrNoCredentials) {
		t.Errorf("obtain without credentials: %v, want %v", err, lock.ErrNoCredentials)
	}
	_, err = libs.NewZKLock(anon, lock.Options{Wait: 5 * time.Second}).Obtain(ctx, "k2", lock.Call{})
	if !errors.Is(err, lock.ErrNoCredentials) {
		t.Errorf("zk-lock without credentials: %v, want %v", err, lock.ErrNoCredentials)
	}
}

// A znode another client made in the moment between the server's start
// and the stack's locking of the root fails the start, naming it.
func TestZooKeeperRefusesAStrangersZnode(t *testing.T) {
	z := launchZooKeeper(t)
	lab := zkSession(t, z.ClientAddr())
	if _, err := lab.Create("/early", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := z.lockRoot(ctx); err == nil || !strings.Contains(err.Error(), "/early") {
		t.Errorf("lockRoot with /early in the tree: %v, want an error naming it", err)
	}
}

func launchEtcd(t *testing.T, embedded bool) *Etcd {
	bin := ""
	if !embedded {
		var err error
		bin, err = proc.LookPath("etcd")
		need.Real(t, "etcd", err)
	}
	return launch(t, NewEtcd(bin, "127.0.0.1", t.TempDir(), t.TempDir(), proc.NewLogger(nil)))
}

// eachEtcd runs f on the stack's etcd, the binary and the embedded one,
// each in a subtest of its own.
func eachEtcd(t *testing.T, f func(t *testing.T, e *Etcd)) {
	for _, embedded := range []bool{false, true} {
		name := map[bool]string{false: "binary", true: "embedded"}[embedded]
		t.Run(name, func(t *testing.T) { f(t, launchEtcd(t, embedded)) })
	}
}

func etcdClient(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := backend.Etcd(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// The stack's etcd, the binary and the embedded one, lets only its user
// near the lab's keys: a client without a password, or with a wrong
// one, can neither read, write nor delete them, the held locks' of both
// rungs (etcd, etcd-mutex) included; and the apps' user may touch
// nothing but them (no key elsewhere, no user, no auth switch).
func TestEtcdLetsInOnlyItsUser(t *testing.T) {
	eachEtcd(t, func(t *testing.T, e *Etcd) {
		lab := etcdClient(t, e.ClientAddr())
		ctx := context.Background()
		o := lock.Options{TTL: 5 * time.Second, Wait: 5 * time.Second}
		held, err := lock.NewEtcd(lab, o).Obtain(ctx, "k", lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		libHeld, err := libs.NewEtcdMutex(lab, o).Obtain(ctx, "k", lock.Call{})
		if err != nil {
			t.Fatal(err)
		}
		count := func() int64 {
			t.Helper()
			r, err := lab.Get(ctx, EtcdLabPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			return r.Count
		}
		if n := count(); n != 2 {
			t.Fatalf("%d keys under %s, want the two held locks'", n, EtcdLabPrefix)
		}

		anon, err := clientv3.New(clientv3.Config{Endpoints: []string{e.client}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer anon.Close()
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for what, try := range map[string]func() error{
			"read":   func() error { _, err := anon.Get(tctx, EtcdLabPrefix, clientv3.WithPrefix()); return err },
			"write":  func() error { _, err := anon.Put(tctx, lock.EtcdPrefix+"k/x", ""); return err },
			"delete": func() error { _, err := anon.Delete(tctx, EtcdLabPrefix, clientv3.WithPrefix()); return err },
			"add a user": func() error {
				_, err := anon.UserAdd(tctx, "x", "x")
				return err
			},
		} {
			if err := try(); err == nil || !strings.Contains(err.Error(), "user name is empty") {
				t.Errorf("no password: %s: %v, want a refusal (user name is empty)", what, err)
			}
		}
		wrong, err := clientv3.New(clientv3.Config{Endpoints: []string{e.client}, DialTimeout: 5 * time.Second,
			Username: EtcdUser, Password: NewPassword()})
		if err == nil {
			_, err = wrong.Delete(tctx, EtcdLabPrefix, clientv3.WithPrefix())
			wrong.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "authentication failed") {
			t.Errorf("wrong password: %v, want authentication failed", err)
		}
		for what, try := range map[string]func() error{
			"write outside the lab's prefix": func() error { _, err := lab.Put(tctx, "/elsewhere", ""); return err },
			"add a user":                     func() error { _, err := lab.UserAdd(tctx, "x", "x"); return err },
			"turn auth off":                  func() error { _, err := lab.AuthDisable(tctx); return err },
		} {
			if err := try(); err == nil || !strings.Contains(err.Error(), "permission denied") {
				t.Errorf("the apps' user: %s: %v, want permission denied", what, err)
			}
		}
		if n := count(); n != 2 {
			t.Errorf("%d keys under %s after the strangers, want the two held locks'", n, EtcdLabPrefix)
		}
		if err := held.Release(ctx); err != nil {
			t.Errorf("the lab's etcd lock after the strangers: %v", err)
		}
		if err := libHeld.Release(ctx); err != nil {
			t.Errorf("the lab's etcd-mutex after the strangers: %v", err)
		}
	})
}

// A user another client added in the moment before the stack turned
// auth on is found, and named.
func TestEtcdRefusesAStrangersUser(t *testing.T) {
	e := launchEtcd(t, true)
	root := etcdClient(t, backend.EtcdURL(e.client, "root", e.rootPassword))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := onlyOurs(ctx, root); err != nil {
		t.Fatalf("a fresh etcd: %v", err)
	}
	if _, err := root.UserAdd(ctx, "early", "x"); err != nil {
		t.Fatal(err)
	}
	if err := onlyOurs(ctx, root); err == nil || !strings.Contains(err.Error(), "early") {
		t.Errorf("with a user early: %v, want an error naming it", err)
	}
}
