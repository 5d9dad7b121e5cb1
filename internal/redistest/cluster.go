package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/internal/hashslot"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// StartCluster starts a Redis Cluster of three masters and three
// replicas, stopped when the test ends, and returns its node addresses,
// masters first. It needs redis-server: without it the test is skipped,
// or fails under CI=true.
func StartCluster(t testing.TB) []string {
	t.Helper()
	NeedServer(t, "redis-server") // miniredis has no cluster mode
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for range 3 { // another package may take a port between our look and the start
		var c *redisfam.Cluster
		if c, err = redisfam.StartCluster(ctx, "127.0.0.1", FreeRun(t, 6), 3, t.TempDir()); err == nil {
			t.Cleanup(func() {
				if err := c.Stop(); err != nil {
					t.Errorf("stop cluster: %v", err)
				}
			})
			return c.Addrs()
		}
	}
	t.Fatalf("start cluster: %v", err)
	return nil
}

// FreeRun finds n consecutive free loopback ports whose cluster bus ports
// (10000 higher) are free too, and returns the first.
func FreeRun(t testing.TB, n int) int {
	t.Helper()
	base, err := redisfam.FreePortRun("127.0.0.1", n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// SlotGuard is a go-redis hook that checks, on the client side, that no
// command or script names keys of two hash slots, and remembers every
// slot used and every CROSSSLOT the server answered.
type SlotGuard struct {
	mu      sync.Mutex
	crossed []string
	slots   map[int]int
}

// Crossed is what crossed slots: commands with their keys.
func (g *SlotGuard) Crossed() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.crossed...)
}

// Slots counts the commands per slot.
func (g *SlotGuard) Slots() map[int]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[int]int, len(g.slots))
	for k, v := range g.slots {
		out[k] = v
	}
	return out
}

func (g *SlotGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *SlotGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.check(cmd)
		err := next(ctx, cmd)
		g.answered(cmd, err)
		return err
	}
}

func (g *SlotGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			g.check(c)
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			g.answered(c, c.Err())
		}
		return err
	}
}

func (g *SlotGuard) answered(cmd redis.Cmder, err error) {
	if err != nil && strings.HasPrefix(err.Error(), "CROSSSLOT") {
		g.mu.Lock()
		g.crossed = append(g.crossed, fmt.Sprintf("%v: %v", cmd.Args(), err))
		g.mu.Unlock()
	}
}

// check records the slots of cmd's keys.
func (g *SlotGuard) check(cmd redis.Cmder) {
	keys := cmdKeys(cmd)
	if len(keys) == 0 {
		return
	}
	slots := map[int]bool{}
	for _, k := range keys {
		slots[Slot(k)] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.slots == nil {
		g.slots = map[int]int{}
	}
	for s := range slots {
		g.slots[s]++
	}
	if len(slots) > 1 {
		g.crossed = append(g.crossed, fmt.Sprintf("%s %v", cmd.Name(), keys))
	}
}

// cmdKeys returns the keys of the commands the lab sends that name keys:
// scripts (their KEYS), the multi-key commands, and the first argument of
// the rest. Commands that name none (PING, PUBLISH, SCAN, CONFIG...)
// return nil.
func cmdKeys(cmd redis.Cmder) []string {
	args := cmd.Args()
	str := func(a any) string { return fmt.Sprint(a) }
	switch cmd.Name() {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		if len(args) < 3 {
			return nil
		}
		n, _ := strconv.Atoi(str(args[2]))
		var keys []string
		for i := 3; i < 3+n && i < len(args); i++ {
			keys = append(keys, str(args[i]))
		}
		return keys
	case "mget", "del", "unlink", "exists", "touch", "watch":
		var keys []string
		for _, a := range args[1:] {
			keys = append(keys, str(a))
		}
		return keys
	case "ping", "publish", "subscribe", "psubscribe", "scan", "config", "cluster", "info", "script",
		"multi", "exec", "discard", "hello", "client", "command", "flushall", "flushdb", "dbsize", "time":
		return nil
	}
	if len(args) < 2 {
		return nil
	}
	return []string{str(args[1])}
}

// Slot is the Redis Cluster hash slot of key.
func Slot(key string) int { return hashslot.Of(key) }
