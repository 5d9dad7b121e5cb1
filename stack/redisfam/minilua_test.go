package redisfam_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/stack/redisfam"
)

// startEmbedded starts an embedded miniredis (with the stack's script
// runner) on a free port.
func startEmbedded(t *testing.T) *redis.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := redisfam.Start(ctx, "127.0.0.1:0", stack.Embedded, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// scriptCases are scripts whose replies the embedded server must give as
// redis-server does: every conversion the lab's scripts rely on.
var scriptCases = []struct {
	name string
	src  string
	keys []string
	args []any
}{
	{"number", `return 42`, nil, nil},
	{"fraction truncated", `return 3.7`, nil, nil},
	{"string", `return "hello"`, nil, nil},
	{"true is 1", `return true`, nil, nil},
	{"false is nil", `return false`, nil, nil},
	{"nil", `return nil`, nil, nil},
	{"array stops at nil", `return {1, "two", 3, nil, 5}`, nil, nil},
	{"nested array", `return {1, {2, "x"}}`, nil, nil},
	{"status reply", `return redis.status_reply("FINE")`, nil, nil},
	{"keys and argv", `return {KEYS[1], KEYS[2], ARGV[1], #ARGV}`, []string{"a", "b"}, []any{"x", 7}},
	{"call: set and get", `redis.call("SET", KEYS[1], ARGV[1]) return redis.call("GET", KEYS[1])`, []string{"k"}, []any{"v"}},
	{"call: missing key is false", `return redis.call("GET", KEYS[1]) == false`, []string{"missing"}, nil},
	{"call: integer reply", `redis.call("DEL", KEYS[1]) return redis.call("INCR", KEYS[1]) + 1`, []string{"n"}, nil},
	{"call: status reply is a table", `local r = redis.call("SET", KEYS[1], "x") return r.ok`, []string{"s"}, nil},
	{"call: array reply", `redis.call("DEL", KEYS[1]) redis.call("RPUSH", KEYS[1], "a", "b") return redis.call("LRANGE", KEYS[1], 0, -1)`, []string{"l"}, nil},
	{"call: number arguments", `redis.call("SET", KEYS[1], 12) return redis.call("GET", KEYS[1])`, []string{"num"}, nil},
	{"call: TIME", `local t = redis.call("TIME") return #t`, nil, nil},
	{"call: hash", `redis.call("DEL", KEYS[1]) redis.call("HINCRBY", KEYS[1], "o", 2) return {redis.call("HEXISTS", KEYS[1], "o"), redis.call("HGET", KEYS[1], "o")}`, []string{"h"}, nil},
	{"pcall: error as a table", `redis.call("SET", KEYS[1], "x") local r = redis.pcall("HGET", KEYS[1], "f") return type(r.err)`, []string{"wrong"}, nil},
	{"tonumber of a reply", `redis.call("SET", KEYS[1], "41") return tonumber(redis.call("GET", KEYS[1])) + 1`, []string{"t"}, nil},
}

// TestEmbeddedScriptsAnswerAsRedis runs every case on the embedded server
// and, where redis-server is installed (always under CI), on it too: the
// replies must be the same.
func TestEmbeddedScriptsAnswerAsRedis(t *testing.T) {
	ctx := context.Background()
	servers := map[string]*redis.Client{"embedded": startEmbedded(t)}
	real, err := redisfam.Start(ctx, "127.0.0.1:0", stack.Real, ci, nil)
	switch {
	case err == nil:
		t.Cleanup(func() { real.Stop() })
		c := redis.NewClient(&redis.Options{Addr: real.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		servers["redis-server"] = c
	case ci:
		t.Fatal(err)
	default:
		t.Logf("redis-server not installed: the embedded answers are checked alone: %v", err)
	}
	want := map[string]any{
		"number": int64(42), "fraction truncated": int64(3), "string": "hello", "true is 1": int64(1),
		"array stops at nil": []any{int64(1), "two", int64(3)}, "nested array": []any{int64(1), []any{int64(2), "x"}},
		"status reply": "FINE", "keys and argv": []any{"a", "b", "x", int64(2)},
		"call: set and get": "v", "call: missing key is false": int64(1), "call: integer reply": int64(2),
		"call: status reply is a table": "OK", "call: array reply": []any{"a", "b"}, "call: number arguments": "12",
		"call: TIME": int64(2), "call: hash": []any{int64(1), "2"}, "pcall: error as a table": "string",
		"tonumber of a reply": int64(42),
	}
	for name, rdb := range servers {
		for _, tc := range scriptCases {
			got, err := redis.NewScript(tc.src).Run(ctx, rdb, tc.keys, tc.args...).Result()
			if w, ok := want[tc.name]; ok {
				if err != nil || !reflect.DeepEqual(got, w) {
					t.Errorf("%s: %s: %#v, %v; want %#v", name, tc.name, got, err, w)
				}
				continue
			}
			// nil results: redis.Nil
			if err != redis.Nil {
				t.Errorf("%s: %s: %#v, %v; want redis.Nil", name, tc.name, got, err)
			}
		}
	}
}

// TestEmbeddedScriptErrors: a failing redis.call aborts the script with an
// error reply, and nothing after it runs; bad EVAL arguments are errors;
// EVALSHA of an unknown script says NOSCRIPT (go-redis then sends EVAL).
func TestEmbeddedScriptErrors(t *testing.T) {
	ctx := context.Background()
	rdb := startEmbedded(t)
	rdb.Set(ctx, "str", "x", 0)
	err := rdb.Eval(ctx, `redis.call("HGET", KEYS[1], "f") redis.call("SET", "after", "1") return 1`, []string{"str"}).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("redis.call on the wrong type: %v, want a WRONGTYPE error", err)
	}
	if n := rdb.Exists(ctx, "after").Val(); n != 0 {
		t.Fatal("the script went on after its failed call")
	}
	if err := rdb.Eval(ctx, `return error("boom")`, nil).Err(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error(): %v", err)
	}
	if err := rdb.Eval(ctx, `return redis.error_reply("ERR mine")`, nil).Err(); err == nil || err.Error() != "ERR mine" {
		t.Fatalf("error_reply: %v", err)
	}
	if err := rdb.Do(ctx, "EVAL", "return 1", "2", "k").Err(); err == nil {
		t.Fatal("more keys than arguments: no error")
	}
	if err := rdb.Eval(ctx, `return (`, nil).Err(); err == nil || !strings.Contains(err.Error(), "compiling") {
		t.Fatalf("syntax error: %v", err)
	}
	if err := rdb.EvalSha(ctx, strings.Repeat("ab", 20), nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("EVALSHA of an unknown script: %v, want NOSCRIPT", err)
	}
	sha, err := rdb.ScriptLoad(ctx, `return ARGV[1]`).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ok := rdb.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Val(); !reflect.DeepEqual(ok, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS: %v", ok)
	}
	if v := rdb.EvalSha(ctx, sha, nil, "back").Val(); v != "back" {
		t.Fatalf("EVALSHA after SCRIPT LOAD: %v", v)
	}
}

// TestEmbeddedScriptsAreAtomic: a script's GET and SET never interleave
// with another script or with a client's command, so 40 clients adding
// by script and 10 by INCR lose nothing.
func TestEmbeddedScriptsAreAtomic(t *testing.T) {
	ctx := context.Background()
	rdb := startEmbedded(t)
	add := redis.NewScript(`local n = tonumber(redis.call("GET", KEYS[1]) or "0") redis.call("SET", KEYS[1], n + 1) return n + 1`)
	const scripters, incrs, each = 40, 10, 50
	var wg sync.WaitGroup
	errs := make(chan error, scripters+incrs)
	for i := range scripters + incrs {
		wg.Go(func() {
			for range each {
				var err error
				if i < scripters {
					err = add.Run(ctx, rdb, []string{"n"}).Err()
				} else {
					err = rdb.Incr(ctx, "n").Err()
				}
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, _ := rdb.Get(ctx, "n").Int(); n != (scripters+incrs)*each {
		t.Fatalf("n = %d after %d additions: some interleaved", n, (scripters+incrs)*each)
	}
}

// TestEmbeddedAnnouncesDeletions: the embedded Redis announces a deleted
// key on its keyspace channel, as redis-server started by the stack does,
// whether a client or a script deletes it; CONFIG SET turns it off.
func TestEmbeddedAnnouncesDeletions(t *testing.T) {
	ctx := context.Background()
	rdb := startEmbedded(t)
	ps := rdb.PSubscribe(ctx, "__keyspace@*__:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		select {
		case m := <-ps.Channel():
			return m.Channel + " " + m.Payload
		case <-time.After(time.Second):
			return "nothing"
		}
	}
	rdb.Set(ctx, "lock:a", "x", 0)
	rdb.Del(ctx, "lock:a")
	if got := next(); got != "__keyspace@0__:lock:a del" {
		t.Fatalf("a client's DEL: %q", got)
	}
	rdb.Set(ctx, "lock:b", "x", 0)
	redis.NewScript(`return redis.call("DEL", KEYS[1])`).Run(ctx, rdb, []string{"lock:b"})
	if got := next(); got != "__keyspace@0__:lock:b del" {
		t.Fatalf("a script's DEL: %q", got)
	}
	if v := rdb.ConfigGet(ctx, "notify-keyspace-events").Val(); v["notify-keyspace-events"] != "Kgx" {
		t.Fatalf("CONFIG GET notify-keyspace-events: %v", v)
	}
	rdb.ConfigSet(ctx, "notify-keyspace-events", "")
	rdb.Del(ctx, "lock:c")
	if got := next(); got != "nothing" {
		t.Fatalf("with keyspace events off: %q", got)
	}
}
