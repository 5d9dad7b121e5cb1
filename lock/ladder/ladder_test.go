package ladder_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

func TestLadder(t *testing.T) {
	l := ladder.New(ladder.Backends{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}, lock.Options{}, lock.RedlockOptions{})
	want := []string{"none", "local", "setnx", "setnx-expire", "setnx-px", "check-del", "lua", "del-setnx", "getset", "reentrant", "redlock", "fenced", "fair", "cohort", "cohort-carry",
		"zookeeper", "etcd", "db-for-update", "pg-advisory", "pg-advisory-xact", "pg-advisory-fenced",
		"redsync", "redsync-redlock", "redislock", "redislock-refresh", "etcd-mutex", "zk-lock", "rueidislock",
		"db-optimistic", "atomic"}
	got := l.Names()
	if len(got) != len(want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("names %v, want %v", got, want)
		}
		r, lk, ok := l.Lookup(want[i])
		if !ok || r.Name != want[i] || r.Summary == "" || r.Flaw == "" {
			t.Errorf("Lookup(%q) = %+v, %v", want[i], r, ok)
		}
		if (lk == nil) != r.Atomic {
			t.Errorf("%s: locker %v with Atomic=%v", r.Name, lk, r.Atomic)
		}
	}
	if _, lk, _ := l.Lookup("redlock"); lk != nil {
		if _, err := lk.Obtain(context.Background(), "k", lock.Call{}); !errors.Is(err, lock.ErrNoMasters) {
			t.Errorf("redlock without masters: %v, want ErrNoMasters", err)
		}
	}
	// Without their servers, the rungs of the other back ends say which
	// server they lack, and how to give it, and take no lock.
	for rung, server := range map[string]string{"redlock": "-masters", "zookeeper": "-zookeeper", "etcd": "-etcd",
		"db-for-update": "-mysql", "db-optimistic": "-mysql",
		"pg-advisory": "-postgres", "pg-advisory-xact": "-postgres", "pg-advisory-fenced": "-postgres",
		"redsync-redlock": "-masters", "etcd-mutex": "-etcd", "zk-lock": "-zookeeper"} {
		r, lk, _ := l.Lookup(rung)
		if !strings.Contains(r.Unavailable, server) {
			t.Errorf("%s: Unavailable %q does not name %s", rung, r.Unavailable, server)
		}
		if lk == nil {
			continue
		}
		if _, err := lk.Obtain(context.Background(), "k", lock.Call{}); !errors.Is(err, lock.ErrNoServer) {
			t.Errorf("%s without its server: %v, want ErrNoServer", rung, err)
		}
	}
	for _, r := range l.Rungs() {
		if r.Unavailable != "" && !slices.Contains([]string{"redlock", "zookeeper", "etcd", "db-for-update", "db-optimistic",
			"pg-advisory", "pg-advisory-xact", "pg-advisory-fenced", "redsync-redlock", "etcd-mutex", "zk-lock"}, r.Name) {
			t.Errorf("%s unavailable over Redis alone: %s", r.Name, r.Unavailable)
		}
	}
	// Only the rungs that count an owner's entries say they re-enter.
	var reenter []string
	for _, r := range l.Rungs() {
		if r.Reenter {
			reenter = append(reenter, r.Name)
		}
	}
	if !slices.Equal(reenter, []string{"local", "reentrant"}) {
		t.Errorf("rungs that re-enter %v, want [local reentrant]", reenter)
	}
	if _, _, ok := l.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}
