package backends

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack/proc"
)

// The apps' etcd client outlives a restart of the stack's etcd, which
// forgets every login token: afterwards it writes and reads again, a
// watch hears a write, and the etcd rung takes and releases its lock. (etcd 3.4, the binary,
// refused the client's next login for the dead token it carried: every
// etcd lock then stalled until the app restarted. A watch open across
// the restart hid it: its stream's new login got through.) Each step after the
// first has the few seconds an app's request would give it.
func TestEtcdClientLogsInAgainAfterARestart(t *testing.T) {
	eachEtcd(t, func(t *testing.T, e *Etcd) {
		lab := etcdClient(t, e.ClientAddr())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		step := func() context.Context {
			c, cancel := context.WithTimeout(ctx, 3*time.Second)
			t.Cleanup(cancel)
			return c
		}
		key := EtcdLabPrefix + "restart-test"
		if _, err := lab.Put(step(), key, "before"); err != nil {
			t.Fatal(err)
		}

		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		// A request while it is down, as under load.
		down, downCancel := context.WithTimeout(ctx, time.Second)
		if _, err := lab.Get(down, key); err == nil {
			t.Fatal("a read while etcd is down succeeded")
		}
		downCancel()
		if err := proc.Launch(ctx, e); err != nil {
			t.Fatal(err)
		}

		// The first request waits out gRPC's reconnect backoff
		// (a second or two after the refusals while it was down).
		first, firstCancel := context.WithTimeout(ctx, 10*time.Second)
		defer firstCancel()
		if _, err := lab.Put(first, key, "after"); err != nil {
			t.Fatalf("put after the restart: %v", err)
		}
		if r, err := lab.Get(step(), key); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "after" {
			t.Fatalf("get after the restart: %v %v, want the value just written", r, err)
		}
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		watch := lab.Watch(clientv3.WithRequireLeader(wctx), key)
		if _, err := lab.Put(step(), key, "heard"); err != nil {
			t.Fatalf("put after the restart: %v", err)
		}
		hear(t, watch, "heard")

		o := lock.Options{TTL: 5 * time.Second, Wait: 3 * time.Second}
		held, err := lock.NewEtcd(lab, o).Obtain(step(), "restart", lock.Call{})
		if err != nil {
			t.Fatalf("the etcd rung after the restart: %v", err)
		}
		if err := held.Release(step()); err != nil {
			t.Errorf("release after the restart: %v", err)
		}
	})
}

// hear waits, a few seconds at most, for watch to report a write of value.
func hear(t *testing.T, watch clientv3.WatchChan, value string) {
	t.Helper()
	for {
		select {
		case r, ok := <-watch:
			if !ok {
				t.Fatal("the watch closed without hearing the write")
			}
			if err := r.Err(); err != nil {
				t.Fatalf("the watch: %v", err)
			}
			for _, ev := range r.Events {
				if string(ev.Kv.Value) == value {
					return
				}
			}
		case <-time.After(3 * time.Second):
			t.Fatal("the watch never heard the write")
		}
	}
}
