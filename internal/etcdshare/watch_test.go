package etcdshare_test

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockladder/lockladder/internal/etcdshare"
	"github.com/lockladder/lockladder/internal/servertest"
)

// TestEtcdWatchesHearDeletesAndEnd: a process keeps one watch per lock
// prefix; every subscriber hears that prefix's deletions (not its puts,
// not another prefix's), a watch nobody listens to closes, a watch that
// ends tells its subscribers so (a waiter must not wait out its bound on a
// dead watch), and the next subscriber opens a new one.
func TestEtcdWatchesHearDeletesAndEnd(t *testing.T) {
	cli := servertest.Etcd(t)
	ws := &etcdshare.Watches{Cli: cli, Idle: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	subscribe := func() interface {
		Next(context.Context) ([]*clientv3.Event, error)
		Cancel()
	} {
		t.Helper()
		s, err := ws.Subscribe(ctx, "/lockladder/t/a/")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	churn := func() {
		t.Helper()
		for _, k := range []string{"/lockladder/t/b/1", "/lockladder/t/a/1"} {
			if _, err := cli.Put(ctx, k, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	heard := func(s interface {
		Next(context.Context) ([]*clientv3.Event, error)
	}) {
		t.Helper()
		evs, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Type != mvccpb.DELETE || string(evs[0].Kv.Key) != "/lockladder/t/a/1" {
			t.Fatalf("heard %v, want the one deletion of /t/a/1", evs)
		}
	}

	a, b := subscribe(), subscribe()
	if n := ws.Open(); n != 1 {
		t.Fatalf("%d watches open for one prefix, want 1", n)
	}
	churn()
	heard(a)
	heard(b)

	a.Cancel()
	b.Cancel()
	for ws.Open() != 0 {
		if ctx.Err() != nil {
			t.Fatal("a watch nobody listens to stayed open")
		}
		time.Sleep(10 * time.Millisecond)
	}

	c := subscribe()
	ws.End("/lockladder/t/a/")
	if evs, err := c.Next(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("after its watch ended, a subscriber heard %v, %v; want the end as an error", evs, err)
	}
	c.Cancel()
	d := subscribe()
	defer d.Cancel()
	churn()
	heard(d)
}
