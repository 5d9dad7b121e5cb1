package explore

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/libs"
)

// Libraries are the library rungs on one Redis (lock/libs), explored
// as the lab's rungs are: each is the Locker ladder.New serves,
// calling the library as its README shows, the library's code unchanged;
// its go-redis client is the explorer's, gated. Their tokens are random
// base64 strings, not UUIDs: the world learns them (tokens.go).
//
// What the virtual clock drives for them, and what it cannot: Redis's
// clock is the search's, so a lease (PX) lapses when the search lets
// time pass, and a paused holder finds it gone. The libraries read
// time.Now and start time.Timers and context deadlines of their own:
// those run on the wall clock, where a schedule takes milliseconds, so
// for them no time passes. redsync's validity check (a majority won
// within the expiry minus the time taken and the drift) therefore always
// passes, and its retry delay and the per-call timeout (5% of the
// expiry) never fire in the search: its Lock is seen one attempt at a
// time (TryLockContext), the wait between attempts the search's choice.
// redislock's Obtain makes one attempt (no RetryStrategy) under a
// deadline of one lease, never reached. redislock-refresh's loop ticks by
// the lab's Ticker (Options.Ticker), so the search drives its Refresh as
// it drives rung 9's watchdog: frozen with its holder in a pause.
var Libraries = labTargets(
	Target{Name: "redsync", New: rung(func(rdb redis.Cmdable, o lock.Options) lock.Locker {
		return libs.NewRedsync([]redis.UniversalClient{rdb.(redis.UniversalClient)}, o)
	}), Faults: Slow, Tokens: true, WallDeadlines: true, ReplayTTL: redsyncReplayTTL},
	Target{Name: "redislock", New: rung(func(rdb redis.Cmdable, o lock.Options) lock.Locker {
		return libs.NewRedislock(rdb, o)
	}), Faults: Slow, Tokens: true},
	Target{Name: "redislock-refresh", New: rung(func(rdb redis.Cmdable, o lock.Options) lock.Locker {
		return libs.NewRedislockRefresh(rdb, o)
	}), Faults: Pause | Idle, Tokens: true},
)

// redsyncReplayTTL is redsync's lease in a replay on redis-server: the
// app's. redsync gives each call to Redis a wall-clock deadline of 5% of
// the expiry: 15 ms at the replay's usual 300 ms, which a loaded machine
// can miss between holding a command and delivering it; 100 ms at 2 s,
// as in the search.
const redsyncReplayTTL = 2 * time.Second

// newRedsyncRedlock is the rung redsync-redlock as ladder.New makes
// it: redsync over the masters, a pool each.
func newRedsyncRedlock(masters []redis.Cmdable, o lock.Options) lock.Locker {
	servers := make([]redis.UniversalClient, len(masters))
	for i, m := range masters {
		servers[i] = m.(redis.UniversalClient)
	}
	return libs.NewRedsync(servers, o)
}
