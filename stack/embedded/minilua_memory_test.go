package embedded

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptMemoryChild, set in its environment, makes the test binary the
// child of TestEmbeddedScriptMemory.
const scriptMemoryChild = "LOCKLADDER_SCRIPT_MEMORY_CHILD"

// A script that would allocate gigabytes (at once, in a loop, in a table,
// through the string and table functions) gets an error reply, and the
// process lives on and serves the next script. Without the bounds the
// process dies with a fatal out-of-memory (it cannot be recovered), so
// the scripts run in a child process: with its address space limited to
// 3 GiB (outside the race detector, which reserves far more), the 4 GiB
// string.rep ends it as it ended the lab's.
func TestEmbeddedScriptMemory(t *testing.T) {
	if os.Getenv(scriptMemoryChild) == "1" {
		scriptMemoryInChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEmbeddedScriptMemory$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), scriptMemoryChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the process lives on") {
		tail := string(out)
		if len(tail) > 4000 {
			tail = tail[:2000] + "\n...\n" + tail[len(tail)-2000:]
		}
		t.Fatalf("the child running the scripts: %v\n%s", err, tail)
	}
	t.Logf("%s", out)
}

func scriptMemoryInChild(t *testing.T) {
	if !raceEnabled {
		lim := syscall.Rlimit{Cur: 3 << 30, Max: 3 << 30}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			t.Logf("no address-space limit: %v", err)
		}
	}
	// The memory bound is what ends these scripts, whatever the time they
	// take to reach it: with the 5s time bound, "table growth" under
	// -race on two loaded cores was killed for its time first (CI run 5).
	scriptTimeout = time.Hour
	ctx := context.Background()
	// A script stopped by its bound may have run a while (seconds under
	// the race detector): the client waits for its answer, however long.
	rdb := redis.NewClient(&redis.Options{Addr: sandboxed(t).Options().Addr, MaxRetries: -1, ReadTimeout: -1})
	defer rdb.Close()
	for _, tc := range []struct{ name, src, want string }{
		{"string.rep", `return #string.rep("x", 2^32)`, "string.rep"},
		{"method rep", `return #("xy"):rep(2^31)`, "string.rep"},
		{"concatenation loop", `local s = "x" for i = 1, 40 do s = s .. s end return #s`, "allocated more than"},
		{"table growth", `local t = {} for i = 1, 1e9 do t[i] = {i, i, i, i, i, i, i, i} end return #t`, "allocated more than"},
		{"table of strings", `local t = {} for i = 1, 1e6 do t[i] = string.rep(tostring(i), 1000) end return #t`, "allocated more than"},
		{"table.concat", `local s = string.rep("x", 2^25) return #table.concat({s, s, s, s, s, s, s, s})`, "table.concat"},
		{"gsub string", `return #string.gsub(string.rep("x", 2^16), "x", string.rep("y", 2^12))`, "string.gsub"},
		{"gsub function", `local big = string.rep("x", 2^25) return #string.gsub(string.rep("x", 100), "x", function() return big end)`, "string.gsub"},
		{"gsub table", `local t = {x = string.rep("x", 2^25)} return #string.gsub(string.rep("x", 100), "x", t)`, "string.gsub"},
		{"format width", `return #string.format("%999999999d", 1)`, "width or precision"},
		{"long concatenation", `local s = string.rep("x", 2^25) return #(s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s..s)`, "concatenation of 20 values"},
	} {
		start := time.Now()
		v, err := rdb.Eval(ctx, tc.src, nil).Result()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want an error saying %q", tc.name, v, err, tc.want)
			continue
		}
		t.Logf("%s: %v (%s)", tc.name, err, time.Since(start).Round(time.Millisecond))
	}
	// What stays within the bounds works as Lua's.
	for _, tc := range []struct {
		src  string
		want any
	}{
		{`return string.rep("ab", 3)`, "ababab"},
		{`return ("ab"):rep(2)`, "abab"},
		{`return string.format("%5.2f|%-3s|%%|%02d", 1.5, "a", 7)`, " 1.50|a  |%|07"},
		{`return table.concat({1, "b", 3}, ",")`, "1,b,3"},
		{`return table.concat({1, 2, 3}, "-", 2)`, "2-3"},
		{`return (string.gsub("hello", "l", "L"))`, "heLLo"},
		{`return (string.gsub("hello", "(l)", "%1%1", 1))`, "helllo"},
		{`return (string.gsub("a b", "%w", {a = "A"}))`, "A b"},
		{`return (string.gsub("a b", "%w", function(c) return c:upper() end))`, "A B"},
		{`return select(2, string.gsub("abc", "%w", "x"))`, int64(3)},
		{`local s = "" for i = 1, 1000 do s = s .. i end return #s`, int64(2893)},
	} {
		if v, err := rdb.Eval(ctx, tc.src, nil).Result(); err != nil || v != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.src, v, err, tc.want)
		}
	}
	if v, err := rdb.Eval(ctx, `return redis.call("SET", "k", "v")`, nil).Result(); err != nil || v != "OK" {
		t.Fatalf("a script after them: %v, %v", v, err)
	}
	t.Log("the process lives on")
}
