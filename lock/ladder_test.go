package lock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

func TestLadder(t *testing.T) {
	l := lock.NewLadder(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), nil, lock.Options{}, lock.RedlockOptions{})
	want := []string{"none", "local", "setnx", "setnx-expire", "setnx-px", "check-del", "lua", "del-setnx", "getset", "reentrant", "redlock", "fenced", "fair", "atomic"}
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
	if _, _, ok := l.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}
