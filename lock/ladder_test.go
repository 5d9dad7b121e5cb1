package lock_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
)

func TestLadder(t *testing.T) {
	l := lock.NewLadder(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), lock.Options{})
	want := []string{"none", "local", "lua", "atomic"}
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
	if _, _, ok := l.Lookup("nope"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}
