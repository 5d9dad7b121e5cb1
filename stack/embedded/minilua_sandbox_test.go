package embedded

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sandboxed starts an embedded miniredis with the stack's script runner.
func sandboxed(t *testing.T) *redis.Client {
	t.Helper()
	r := NewRedis("127.0.0.1:0", "")
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Any client of the embedded Redis may send a script: like Redis's, it
// reads no file, reaches no OS library, cannot run EVAL on miniredis's
// own unsandboxed engine, and gives setmetatable tables only.
func TestEmbeddedScriptSandbox(t *testing.T) {
	ctx := context.Background()
	rdb := sandboxed(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("return 'read from disk'"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.Eval(ctx, `return {type(dofile), type(loadfile), type(require), type(module), type(print),
		type(os), type(io), type(debug), type(package), type(loadstring), type(pcall)}`, nil).Result()
	want := []any{"nil", "nil", "nil", "nil", "nil", "nil", "nil", "nil", "nil", "function", "function"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("types of dofile, loadfile, require, module, print, os, io, debug, package, loadstring, pcall: %v, %v; want %v", got, err, want)
	}
	for _, src := range []string{`return dofile(ARGV[1])`, `return loadfile(ARGV[1])()`} {
		if v, err := rdb.Eval(ctx, src, nil, secret).Result(); err == nil || strings.Contains(err.Error(), "read from disk") {
			t.Errorf("%s: %v, %v; want an error that reads nothing", src, v, err)
		}
	}
	for _, src := range []string{
		`return redis.call("EVAL", "return 1", 0)`,
		`return redis.call("eval", "return 1", 0)`,
		`return redis.call("EVALSHA", "` + strings.Repeat("0", 40) + `", 0)`,
		`return redis.call("SCRIPT", "FLUSH")`,
		`return redis.call("MULTI")`,
	} {
		if err := rdb.Eval(ctx, src, nil).Err(); err == nil || !strings.Contains(err.Error(), "not allowed from script") {
			t.Errorf("%s: %v, want refused", src, err)
		}
	}
	if err := rdb.Eval(ctx, `setmetatable("", {__index = function() return "x" end}) return 1`, nil).Err(); err == nil {
		t.Error("setmetatable of a string: no error")
	}
}

// Nothing a script does to its globals or libraries reaches a later
// script (the states are reused): neither a redefined redis.call nor a
// global, a library function taken away, a metatable on _G or on a
// library, the strings' metatable changed, or another environment.
func TestEmbeddedScriptsDoNotShareGlobals(t *testing.T) {
	ctx := context.Background()
	rdb := sandboxed(t)
	tamper := `
		redis.call = function() return "forged" end
		rawset(redis, "pcall", nil)
		leaked = "yes"
		string.format = nil
		getmetatable("").__index = {upper = function() return "forged" end}
		setmetatable(_G, {__index = function() return "from _G's metatable" end})
		setmetatable(math, {__index = function() return 7 end})
		setfenv(0, {})
		return 1`
	check := `return {redis.call("SET", KEYS[1], "v").ok, type(redis.pcall), type(leaked), type(string.format),
		("abc"):upper(), type(undefined), type(math.nothing), type(KEYS)}`
	want := []any{"OK", "function", "nil", "function", "ABC", "nil", "nil", "table"}
	for i := range 3 {
		if err := rdb.Eval(ctx, tamper, nil).Err(); err != nil {
			t.Fatalf("tampering script: %v", err)
		}
		got, err := rdb.Eval(ctx, check, []string{"k"}).Result()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d, after a script tampered with the state: %v, %v; want %v", i, got, err, want)
		}
	}
}

// A script that never ends is stopped with an error after scriptTimeout,
// as Redis's busy script ends in SCRIPT KILL, and the server serves on:
// `EVAL "while true do end" 0` used to hang every client of the embedded
// Redis for good.
func TestEmbeddedScriptTimeLimit(t *testing.T) {
	old := scriptTimeout
	scriptTimeout = 300 * time.Millisecond
	t.Cleanup(func() { scriptTimeout = old })
	ctx := context.Background()
	rdb := sandboxed(t)
	for _, src := range []string{
		`while true do end`,
		`while true do pcall(function() while true do end end) end`, // the kill is no error a pcall keeps
	} {
		start := time.Now()
		err := rdb.Eval(ctx, src, nil).Err()
		if err == nil || !strings.Contains(err.Error(), "Script killed") {
			t.Fatalf("%s: %v, want it killed", src, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%s: stopped after %s, limit %s", src, took, scriptTimeout)
		}
	}
	if err := rdb.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("a command after the killed script: %v", err)
	}
	if v, err := rdb.Eval(ctx, `return redis.call("GET", "after")`, nil).Result(); err != nil || v != "1" {
		t.Fatalf("a script after the killed one: %v, %v", v, err)
	}
}
