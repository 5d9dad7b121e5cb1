package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/locktest"
	"github.com/lockladder/lockladder/lock/speed"
	"github.com/lockladder/lockladder/lock/speed/notify"
)

// sale is one /sale as the handlers run it: Obtain, the non-atomic sale
// (fenced when the lock carries a token), Release (in the pipeline of the
// last write when the lock can). It returns the round trips spent taking
// the lock and giving it up, and in all.
func sale(ctx context.Context, c lock.Call, store *inventory.Store, l lock.Locker, rt []*locktest.RoundTrips) (lockRTT, total int64, err error) {
	count := func() (n int64) {
		for _, r := range rt {
			n += r.N.Load()
		}
		return n
	}
	start := count()
	held, err := l.Obtain(ctx, inventory.StockLock, c)
	if err != nil {
		return 0, 0, err
	}
	lockRTT = count() - start

	var then []inventory.Then
	var released func() error
	if pr, ok := held.(lock.PipelineReleaser); ok {
		then = append(then, func(p redis.Pipeliner) { released = pr.ReleaseIn(ctx, p) })
	}
	g := inventory.Guard{Then: then}
	if t, ok := held.(lock.Tokened); ok {
		g.Token = t.Token()
	}
	_, err = store.Sell(ctx, g)
	if err != nil {
		return 0, 0, err
	}
	if released != nil {
		err = released()
	} else {
		before := count()
		err = held.Release(ctx)
		lockRTT += count() - before
	}
	return lockRTT, count() - start, err
}

// BenchmarkRoundTrips counts the Redis round trips of one sale under each
// Redis rung and the atomic script: lock-rtt/op is what taking and giving
// up the lock cost, rtt/sale everything. "alone" is one client with the
// lock always free; "contended" is 16 goroutines on one lock, where every
// retry of a busy lock is a round trip too: the price of each way to wait.
//
//	go test -run '^$' -bench RoundTrips -benchtime 2000x ./lock/
func BenchmarkRoundTrips(b *testing.B) {
	rdb, _ := redistest.Start(b)
	ctx := context.Background()
	rt := &locktest.RoundTrips{}
	rdb.AddHook(rt)
	if err := notify.EnableKeyspaceEvents(ctx, rdb); err != nil {
		b.Fatal(err)
	}
	n := notify.New(rdb, notify.Options{})
	defer n.Close()
	<-n.Ready()
	masters, _ := redistest.StartMasters(b, 5)
	var mrt []*locktest.RoundTrips
	for _, m := range masters {
		r := &locktest.RoundTrips{}
		m.AddHook(r)
		mrt = append(mrt, r)
	}
	store := inventory.New(rdb)
	o := lock.Options{TTL: 5 * time.Second, Wait: 10 * time.Second, Notifier: n}

	type rung struct {
		name string
		l    lock.Locker
		rt   []*locktest.RoundTrips
	}
	one := []*locktest.RoundTrips{rt}
	rungs := []rung{
		{"setnx", lock.NewSetNX(rdb, o), one},
		{"setnx-expire", lock.NewSetNXExpire(rdb, o), one},
		{"setnx-px", lock.NewSetNXPX(rdb, o), one},
		{"check-del", lock.NewCheckDel(rdb, o), one},
		{"lua", lock.NewLua(rdb, o), one},
		{"getset", lock.NewGetSet(rdb, o), one},
		{"reentrant", lock.NewReentrant(rdb, o), one},
		{"redlock", speed.RedlockLine(lock.NewRedlock(redistest.Cmdables(masters), o, lock.RedlockOptions{})), append(mrt, rt)},
		{"fenced", lock.NewFenced(rdb, o), one},
		{"fair", lock.NewFair(rdb, o), one},
	}
	reset := func(b *testing.B) {
		if err := store.Reset(ctx, 1_000_000_000); err != nil {
			b.Fatal(err)
		}
	}

	for _, r := range rungs {
		b.Run("alone/"+r.name, func(b *testing.B) {
			reset(b)
			var lockRTT, total int64
			for b.Loop() {
				l, t, err := sale(ctx, lock.Call{}, store, r.l, r.rt)
				if err != nil {
					b.Fatal(err)
				}
				lockRTT += l
				total += t
			}
			b.ReportMetric(float64(lockRTT)/float64(b.N), "lock-rtt/op")
			b.ReportMetric(float64(total)/float64(b.N), "rtt/sale")
		})
	}
	b.Run("alone/atomic", func(b *testing.B) {
		reset(b)
		start := rt.N.Load()
		for b.Loop() {
			if _, err := store.SellAtomic(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(0, "lock-rtt/op")
		b.ReportMetric(float64(rt.N.Load()-start)/float64(b.N), "rtt/sale")
	})

	for _, tc := range []struct {
		name string
		l    lock.Locker
		c    lock.Call
	}{
		{"lua/fixed", lock.NewLua(rdb, o), lock.Call{Wait: lock.WaitFixed}},
		{"lua/backoff", lock.NewLua(rdb, o), lock.Call{Wait: lock.WaitBackoff}},
		{"lua/notify", lock.NewLua(rdb, o), lock.Call{Wait: lock.WaitNotify}},
		{"fair", lock.NewFair(rdb, o), lock.Call{}},
	} {
		b.Run("contended/"+tc.name, func(b *testing.B) {
			reset(b)
			start, before := time.Now(), rt.N.Load()
			b.SetParallelism(8) // 16 goroutines on 2 CPUs
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := sale(ctx, tc.c, store, tc.l, one); err != nil {
						b.Error(err)
						return
					}
				}
			})
			// Concurrent sales share the counter: report the client's
			// total over the sales.
			b.ReportMetric(float64(rt.N.Load()-before)/float64(b.N), "rtt/sale")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sales/s")
		})
	}
}
