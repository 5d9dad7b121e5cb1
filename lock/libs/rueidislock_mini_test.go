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
// TRACKING (the embedded miniredis, the no-dependency path) the rung
// falls back to its README's DisableCache and still excludes: 30
// contenders, 10 increments each, none lost.
func TestLibRueidislockWithoutClientSideCaching(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	opt, err := libs.RueidisOption(rdb)
	if err != nil {
		t.Fatal(err)
	}
	l := libs.NewRueidislock(opt, lock.Options{Wait: 10 * time.Second})
	contend(t, rdb, l, lock.Call{}, "n:mini", 30, 10)
}
