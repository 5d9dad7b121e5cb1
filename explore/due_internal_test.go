package explore

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// stalledKV stalls every listing of the keys, as a GC pause or a loaded
// machine can between the moment nextDue takes as now and its reading of
// a key's TTL.
type stalledKV struct{ kv }

func (s stalledKV) Keys() []string {
	time.Sleep(20 * time.Millisecond)
	return s.kv.Keys()
}

// TestNextDueOnARealServerIsNeverEarly: on a real redis-server, the time
// a replay lets pass to is never before the key it waits for has expired
// on the server, however late its TTL is read. Counted from before a
// stalled read, it fell due early, B's SET NX found A's key still there,
// and redsync's counterexample was "not-reproduced" (once in CI).
func TestNextDueOnARealServerIsNeverEarly(t *testing.T) {
	var out strings.Builder
	p, stop, err := StartReplayer(context.Background(), &out, os.Getenv("CI") == "true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if p == nil {
		t.Skip(strings.TrimSpace(out.String()))
	}
	tg, err := LookupAny("lua")
	if err != nil {
		t.Fatal(err)
	}
	ex := newReal(tg, Config{MaxClients: 2, password: p.Password}, p.Addr)
	defer ex.Close()
	rdb := ex.kv.(realKV).rdb
	ex.kv = stalledKV{ex.kv}
	w := &world{ex: ex}
	for i := range 5 {
		if err := rdb.Set(bg, "lock", "A1", 2*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		due := w.nextDue()
		at, err := rdb.PExpireTime(bg, "lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		// The server keeps a key while its clock is at or before its
		// expiry (now > when expires it).
		if got, want := due.UnixMilli(), at.Milliseconds(); got <= want {
			t.Fatalf("try %d: time passes to %d ms, the lock expires after %d ms: %d ms early", i, got, want, want-got+1)
		}
	}
}
