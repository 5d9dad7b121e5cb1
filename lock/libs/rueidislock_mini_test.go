package libs_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
)

// TestLibRueidislockWithoutClientSideCaching: on a Redis without CLIENT
// TRACKING (the embedded miniredis, the no-dependency path) the rung,
// which runs with its README's DisableCache everywhere, excludes: 10
// contenders, 10 increments each, none lost. (30 contenders showed
// nothing more and took over a minute on two loaded cores: the
// library's waiters poll every 20ms.)
func TestLibRueidislockWithoutClientSideCaching(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	opt, err := libs.RueidisOption(rdb)
	if err != nil {
		t.Fatal(err)
	}
	// Exclusion is what it checks, so a contender waits for the lock as
	// long as it takes: the library's waiters are not served in order
	// (one process's gate wakes one of them, the others poll every 20ms),
	// and under -race on two loaded cores one waited out a 10s bound.
	l := libs.NewRueidislock(opt, lock.Options{Wait: time.Hour})
	contend(t, rdb, l, lock.Call{}, "n:mini", 10, 10)
}
