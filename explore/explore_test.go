package explore_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
	"github.com/lockladder/lockladder/internal/racebuild"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
)

func run(t *testing.T, tg explore.Target, cfg explore.Config) explore.Result {
	t.Helper()
	ex, err := explore.New(tg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	r := ex.Run(context.Background())
	if r.Diverged != 0 {
		t.Errorf("%s: %d replays went another way than their first run", tg.Name, r.Diverged)
	}
	if testing.Verbose() {
		r.Write(os.Stdout)
	}
	return r
}

var (
	foundMu sync.Mutex
	found   = map[string]explore.Result{}
)

// search runs the search of rung name once for the tests that use it.
func search(t *testing.T, name string) explore.Result {
	t.Helper()
	foundMu.Lock()
	defer foundMu.Unlock()
	r, ok := found[name]
	if !ok {
		r = run(t, lookup(t, name), explore.Config{Budget: hangGuard})
		found[name] = r
	}
	return r
}

func lookup(t *testing.T, name string) explore.Target {
	t.Helper()
	tg, err := explore.LookupAny(name) // Targets and OnMasters
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestFindsEachFlaw finds the flaw the ladder names for each flawed rung,
// in the shortest schedule: the articles' interleavings (docs/explore.md
// draws them), each within seconds.
func TestFindsEachFlaw(t *testing.T) {
	for _, c := range []struct {
		name    string
		verdict string
		steps   int
		clients int
	}{
		{"setnx", explore.Deadlock, 2, 2},        // A SETNX, A dies
		{"setnx-expire", explore.Deadlock, 2, 2}, // A SETNX, A dies before its EXPIRE
		{"setnx-px", explore.Oversold, 11, 3},    // A's DEL frees B's lock, C enters
		{"check-del", explore.Oversold, 12, 3},   // the lock passes to B between A's GET and DEL
		{"lua", explore.Oversold, 7, 2},          // the lease lapses in A's business
		{"del-setnx", explore.Oversold, 15, 3},   // P2 and P3 both DEL and SETNX
		{"getset", explore.Oversold, 9, 2},       // B's clock runs ahead
		{"reentrant", explore.Oversold, 7, 2},    // A paused past its lease, watchdog and all
	} {
		t.Run(c.name, func(t *testing.T) {
			r := search(t, c.name)
			if r.Verdict != c.verdict || r.Steps != c.steps || r.Clients != c.clients {
				t.Errorf("%s: %s in %d steps with %d clients, want %s in %d with %d", c.name, r.Verdict, r.Steps, r.Clients, c.verdict, c.steps, c.clients)
			}
			if len(r.Trace) < r.Steps {
				t.Errorf("%s: a trace of %d rows for %d steps", c.name, len(r.Trace), r.Steps)
			}
		})
	}
}

// TestFencedSafe finds nothing wrong with the fenced rung within its
// bounds: the stale holder's read and write are refused. Every schedule
// to depth 9 is pure CPU that the race detector makes many times
// dearer: under -race the search stops at 8, still past the planted
// bug's 7 below, and the pass without -race (make test-embedded RACE=)
// searches to 9.
func TestFencedSafe(t *testing.T) {
	depth := 9
	if racebuild.Enabled {
		depth = 8
	}
	r := run(t, lookup(t, "fenced"), explore.Config{MaxClients: 2, Depth: depth, Budget: hangGuard})
	if r.Verdict != explore.None {
		t.Fatalf("fenced: %s in %d steps", r.Verdict, r.Steps)
	}
	if r.States < 100 || len(r.Covers) != 1 || r.Covers[0].Depth < depth { // the planted bug below takes 7
		t.Errorf("fenced: covered too little to say: %s", r.Covered())
	}
}

// writeCheck is the part of inventory's fenced_write.lua that refuses a
// token lower than the highest seen: the fence.
const writeCheck = `if token < highest then
  return {0, highest}
end
`

// inventoryScript reads one of inventory's Lua scripts as it is in the
// tree: the planted bug is made from them at test time, so that it
// follows the scripts that serve rather than a copy that can drift.
func inventoryScript(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "inventory", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFindsAPlantedBug plants a bug in the safe rung: its sale reads with
// the fencing token (inventory's fenced_read.lua) but writes with
// inventory's fenced_write.lua less its check of the token. The explorer
// finds the stale holder's write that lands.
func TestFindsAPlantedBug(t *testing.T) {
	write := inventoryScript(t, "fenced_write.lua")
	if n := strings.Count(write, writeCheck); n != 1 {
		t.Fatalf("inventory/fenced_write.lua has its token check %d times, want once: the planted bug cannot be made from it:\n%s", n, write)
	}
	unchecked := redis.NewScript(strings.Replace(write, writeCheck, "", 1))
	read := redis.NewScript(inventoryScript(t, "fenced_read.lua"))
	tg := lookup(t, "fenced")
	tg.Name = "fenced-unchecked-write"
	b := *tg.Business
	tg.Business = &b
	b.Run = func(ctx context.Context, rdb redis.UniversalClient, l explore.Held) error {
		token := l.(lock.Tokened).Token()
		res, err := read.Run(ctx, rdb, []string{inventory.StockFence, inventory.KeyStock}, token).Slice()
		if err != nil || res[0].(int64) != 1 {
			return err
		}
		stock, err := strconv.ParseInt(res[1].(string), 10, 64)
		if err != nil {
			return err
		}
		keys := []string{inventory.StockFence, inventory.KeyStock, inventory.KeySold}
		return unchecked.Run(ctx, rdb, keys, token, stock-1).Err()
	}
	r := run(t, tg, explore.Config{MaxClients: 2, Budget: hangGuard})
	if r.Verdict != explore.Oversold {
		t.Fatalf("the planted bug was not found: %s; %s", r.Verdict, r.Covered())
	}
	t.Logf("found in %d steps, %d schedules", r.Steps, r.Schedules)
}

// TestReplayOnRealRedis replays counterexamples on a real redis-server:
// each happens there too, and the lease-lapse schedule of setnx-px does
// not oversell the rung that fixed it (check-del's token, lua's script).
func TestReplayOnRealRedis(t *testing.T) {
	ctx := context.Background()
	ci := os.Getenv("CI") == "true"
	var out strings.Builder
	p, stop, err := explore.StartReplayer(ctx, &out, ci)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if p == nil {
		t.Skip(strings.TrimSpace(out.String()))
	}
	// Nobody else on the host reaches the replays' server.
	anon := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("the replays' redis-server answered PING without its password: %v (want NOAUTH)", err)
	}
	anon.Close()
	for _, name := range []string{"setnx", "setnx-px", "del-setnx", "getset"} {
		tg, r := lookup(t, name), search(t, name)
		if got := p.Replay(ctx, tg, r); got != "reproduced" {
			t.Errorf("%s: %s %d steps replayed on redis-server: %s", name, r.Verdict, r.Steps, got)
		}
		if name == "setnx-px" {
			if got := p.Replay(ctx, lookup(t, "lua"), r); got != "not-reproduced" {
				t.Errorf("setnx-px's counterexample replayed on lua: %s, want not-reproduced", got)
			}
		}
	}
}
