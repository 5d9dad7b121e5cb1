package ladder_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// TestLibLadder: the library rungs are on the ladder, served over Redis
// alone where they need only Redis, and say which server they lack.
func TestLibLadder(t *testing.T) {
	l := ladder.New(ladder.Backends{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}, lock.Options{}, lock.RedlockOptions{})
	for name, lacks := range map[string]string{"redsync": "", "redislock": "", "redislock-refresh": "",
		"redsync-redlock": "-masters", "etcd-mutex": "-etcd", "zk-lock": "-zookeeper"} {
		r, lk, ok := l.Lookup(name)
		if !ok || lk == nil || r.Summary == "" || r.Flaw == "" || !r.Try || r.Atomic || r.Reenter || len(r.Waits) != 0 {
			t.Errorf("%s: %+v, %v", name, r, ok)
			continue
		}
		switch {
		case lacks == "" && r.Unavailable != "":
			t.Errorf("%s unavailable over Redis: %s", name, r.Unavailable)
		case lacks != "":
			if _, err := lk.Obtain(context.Background(), "k", lock.Call{}); !errors.Is(err, lock.ErrNoServer) {
				t.Errorf("%s without its server: %v, want ErrNoServer", name, err)
			}
			if !strings.Contains(r.Unavailable, lacks) {
				t.Errorf("%s: Unavailable %q does not name %s", name, r.Unavailable, lacks)
			}
		}
	}
}
