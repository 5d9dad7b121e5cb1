package suite_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/stack"
	"github.com/lockladder/lockladder/suite"
)

// The whole matrix against fake stacks: every pair the ladder lists runs
// on its scenario's stack and gets the verdict the fake's flaws produce,
// which are the ladder's; pairs without a verdict and locks the app does
// not offer are skipped with a reason; faults, hooks and stacks are as the
// scenarios say.
func TestRunMatrixWithFakes(t *testing.T) {
	offered := slices.DeleteFunc(suite.LadderLocks(), func(l string) bool { return l == "fenced" })
	fs := &fakeStacks{offered: offered, started: map[string]*fakeStack{}}
	dir := t.TempDir()
	var progress bytes.Buffer
	// c below the hooks' hit (a third of the stock): some requests are
	// answered before the masters stop, as in a real run.
	const n, c, stock = 200, 10, 50
	cfg := suite.MatrixConfig{
		Requests: n, Concurrency: c, Stock: stock, Timeout: 10 * time.Second,
		// Embedded: the fakes cannot crash masters, and the scenarios
		// that do are skipped as on a machine without redis-server.
		Stack:       stack.Config{Dir: dir, AppArgs: []string{"-retry", "10ms"}, LBAddr: "127.0.0.1:8080", AppBasePort: 8081, Redis: stack.Embedded},
		RequireReal: true,
		Start:       fs.start,
		Progress:    &progress,
	}
	start := time.Now()
	rows, skips, err := suite.RunMatrix(t.Context(), cfg)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var grid bytes.Buffer
	suite.WriteGrid(&grid, rows, skips, took)
	t.Log("\n" + grid.String())

	// Every pair once: run, or skipped with a reason.
	pairs := map[string]int{}
	for _, r := range rows {
		pairs[r.Scenario+" "+r.Lock]++
		if r.Endpoint != "sale" {
			t.Errorf("%s %s: endpoint %s, want only sale", r.Scenario, r.Lock, r.Endpoint)
		}
		if r.Expected == "" || r.Verdict != r.Expected {
			t.Errorf("%s %s: verdict %s, expected %q (row %+v)", r.Scenario, r.Lock, r.Verdict, r.Expected, r)
		}
	}
	for _, s := range skips {
		pairs[s.Scenario+" "+s.Lock]++
		if s.Reason == "" {
			t.Errorf("skip %+v has no reason", s)
		}
		if sc := scenarioNamed(t, s.Scenario); sc.CrashesMasters && s.Lock == "redlock" &&
			!strings.Contains(s.Reason, "unavailable here: it crashes Redlock masters, which needs redis-server") {
			t.Errorf("%s redlock on miniredis: reason %q, want that it needs redis-server", s.Scenario, s.Reason)
		}
		if s.Lock == "fenced" {
			if _, expected, _ := scenarioNamed(t, s.Scenario).Expected("fenced", "sale"); expected &&
				!strings.Contains(s.Reason, "does not offer") {
				t.Errorf("fenced in %s: reason %q, want that the app does not offer it", s.Scenario, s.Reason)
			}
		}
	}
	for _, sc := range suite.Scenarios() {
		for _, l := range suite.LadderLocks() {
			if pairs[sc.Name+" "+l] != 1 {
				t.Errorf("%s %s: run or skipped %d times, want once", sc.Name, l, pairs[sc.Name+" "+l])
			}
		}
	}
	// 122 pairs in the ladder, fenced in 3 of them not offered, the 3
	// majority crashes of redlock and redsync-redlock unavailable on these
	// miniredis stand-ins.
	if want := 122 - 3 - 6; len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	if !strings.Contains(grid.String(), "113 of 113 pairs as the ladder expects; took ") {
		t.Errorf("grid summary:\n%s", grid.String())
	}

	// The stacks: one per scenario that can run here, free ports, the
	// scenario's flags, all stopped; none for the majority crashes.
	if want := len(suite.Scenarios()) - 3; len(fs.started) != want {
		t.Errorf("%d stacks started, want %d: one per scenario but the majority crashes", len(fs.started), want)
	}
	for name := range fs.started {
		if strings.HasPrefix(name, "majority-crash") {
			t.Errorf("a stack started for %s, which needs redis-server", name)
		}
	}
	// The other back ends start only where their rungs run.
	for name, want := range map[string][4]stack.Mode{
		"normal":        {stack.Auto, stack.Auto, stack.Auto, stack.Auto},
		"pause-session": {stack.Auto, stack.Auto, stack.Auto, stack.Auto},
		"skew":          {stack.Off, stack.Off, stack.Off, stack.Off},
		"session-cut":   {stack.Off, stack.Off, stack.Off, stack.Auto},
	} {
		c := fs.started[name].cfg
		if got := [4]stack.Mode{c.ZooKeeper, c.MariaDB, c.Etcd, c.Postgres}; got != want {
			t.Errorf("%s: back ends (zookeeper, mariadb, etcd, postgres) %v, want %v", name, got, want)
		}
	}
	// The session-cut hooks cut a session once per armed request: 4 in
	// each of its 3 locks' runs.
	if log := fs.started["session-cut"].log; len(log) != 12 || log[0] != "cut postgres" {
		t.Errorf("session-cut: the stack saw %v, want 12 cuts", log)
	}
	for name, s := range fs.started {
		c := s.cfg
		if c.LBAddr != "127.0.0.1:0" || c.RedisAddr != "127.0.0.1:0" || c.AppBasePort != 0 || !c.RequireReal {
			t.Errorf("%s: stack %+v: want free loopback ports and RequireReal", name, c)
		}
		if c.StableAfter != time.Second {
			t.Errorf("%s: restart backoff starts over after %v, want 1s: its instances crash on purpose, runs back to back", name, c.StableAfter)
		}
		if len(c.AppArgs) < 2 || c.AppArgs[0] != "-retry" {
			t.Errorf("%s: app args %q lack the template's", name, c.AppArgs)
		}
		if !s.stopped {
			t.Errorf("%s: stack not stopped", name)
		}
	}
	if c := fs.started["slow"].cfg; !slices.Equal(c.AppArgs, []string{"-retry", "10ms", "-faults", "-lock-ttl", "200ms", "-lock-wait", "1s"}) {
		t.Errorf("slow: app args %q", c.AppArgs)
	}
	if c := fs.started["skew"].cfg; !slices.Equal(c.InstanceArgs[2], []string{"-clock-skew", "2s"}) || len(c.InstanceArgs) != 1 {
		t.Errorf("skew: instance args %v, want app3 (index 2) skewed", c.InstanceArgs)
	}
	single := fs.started["single"]
	if single.cfg.Instances != 1 || single.direct.Load() != 2*n || single.lbHits.Load() != 0 {
		t.Errorf("single: %d instances, %d direct load requests, %d through the LB; want 1, %d, 0",
			single.cfg.Instances, single.direct.Load(), single.lbHits.Load(), 2*n)
	}
	if normal := fs.started["normal"]; normal.cfg.Instances != 3 || normal.direct.Load() != 0 {
		t.Errorf("normal: %d instances, %d direct: want 3 behind the LB", normal.cfg.Instances, normal.direct.Load())
	}

	// Hooks: stopped once a third of the way in, started again after the run.
	for name, want := range map[string][]string{
		// A run per lock on the masters: redlock, redsync-redlock.
		"masters-down":   slices.Repeat([]string{"stop 0", "stop 1", "start 0", "start 1"}, 2),
		"masters-down-3": slices.Repeat([]string{"stop 0", "stop 1", "stop 2", "start 0", "start 1", "start 2"}, 2),
		// A run per lock: zookeeper, etcd, etcd-mutex, zk-lock,
		// db-for-update, db-optimistic and the three pg rungs.
		"backend-restart": slices.Repeat([]string{"stop zookeeper", "stop mariadb", "stop etcd",
			"start zookeeper", "start mariadb", "start etcd"}, 9),
	} {
		// The masters of one hook go down (and come back) at once: within
		// a run of stops or starts, in any order.
		if got := fs.started[name].log; !slices.Equal(byPhase(got), byPhase(want)) {
			t.Errorf("%s: masters %v, want %v", name, got, want)
		}
	}
	for _, r := range rows {
		switch {
		case r.Scenario == "masters-down-3":
			if r.Codes["503"] <= r.OK || r.Oversold != 0 {
				t.Errorf("masters-down-3: want mostly 503s and nothing oversold: %+v", r)
			}
		case r.Verdict == bench.VerdictDeadlock:
			bound := float64(scenarioNamed(t, r.Scenario).StallBound.Milliseconds())
			if !r.Stopped || r.StallMs <= bound || r.StallMs > bound+1000 || r.Requests >= n {
				t.Errorf("%s %s: DEADLOCK wants a stop just past the %gms bound: %+v", r.Scenario, r.Lock, bound, r)
			}
		default:
			if r.Stopped || r.Requests != n {
				t.Errorf("%s %s: stopped %v after %d requests", r.Scenario, r.Lock, r.Stopped, r.Requests)
			}
		}
	}

	// Arming: exactly the planned armed requests in a run that went to its
	// end, and check-pause's work= on every request.
	last := fs.started["check-pause"].shop.seen // the last run there: lua
	cp := scenarioNamed(t, "check-pause")
	armed, work := len(cp.ArmAt), "lua work="+cp.Every.Get("work")
	if armed < 2 || last["lua fault=check-pause"] != armed || last["lua pause=600ms"] != armed || last[work] != n {
		t.Errorf("check-pause/lua requests carried %v; want %d armed, %s on all %d", last, armed, work, n)
	}

	for _, r := range rows {
		if r.Scenario == "crash" && r.Lock == "lua" && (len(r.Armed) != 1 || r.Armed["502"] != 4) {
			t.Errorf("crash/lua: armed outcomes %v, want the 4 crashes' 502s", r.Armed)
		}
		if r.Scenario == "normal" && r.Armed != nil {
			t.Errorf("normal/%s: armed outcomes %v, want none", r.Lock, r.Armed)
		}
	}

	out := progress.String()
	for _, want := range []string{"crash: lock TTL 200ms", "crash setnx/sale", "stall 3", "(stopped)", "DEADLOCK ✓"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// byPhase sorts each run of log entries with the same verb ("stop 1",
// "stop 0" | "start 0" ...), keeping the runs in their order.
func byPhase(log []string) []string {
	out := slices.Clone(log)
	for i := 0; i < len(out); {
		verb, _, _ := strings.Cut(out[i], " ")
		j := i
		for j < len(out) && strings.HasPrefix(out[j], verb+" ") {
			j++
		}
		slices.Sort(out[i:j])
		i = j
	}
	return out
}

func scenarioNamed(t *testing.T, name string) suite.Scenario {
	t.Helper()
	s, err := suite.LookupScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunMatrixChoices(t *testing.T) {
	fs := &fakeStacks{offered: suite.LadderLocks(), started: map[string]*fakeStack{}}
	cfg := suite.MatrixConfig{
		Scenarios: []string{"slow", "single"}, Locks: []string{"lua", "local", "nope"},
		Endpoints: []string{"sale", "testLock"},
		Requests:  40, Concurrency: 4, Stock: 10, Start: fs.start,
		Stack: stack.Config{Dir: t.TempDir()},
	}
	rows, skips, err := suite.RunMatrix(t.Context(), cfg)
	// The fake serves no /testLock: the first testLock run fails, after
	// single's local/sale (single comes first, as in Scenarios()).
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("error %v, want the fake's 404 on /testLock", err)
	}
	if len(rows) != 1 || rows[0].Scenario != "single" || rows[0].Lock != "local" || rows[0].Endpoint != "sale" {
		t.Errorf("rows %+v", rows)
	}
	var got []string
	for _, s := range skips {
		got = append(got, s.Scenario+" "+s.Lock)
	}
	if want := []string{"single lua", "single nope"}; !slices.Equal(got, want) {
		t.Errorf("skips %v, want %v", got, want)
	}
	if _, ok := fs.started["slow"]; ok {
		t.Error("slow started after single failed")
	}
	if !fs.started["single"].stopped {
		t.Error("single's stack not stopped after the failure")
	}

	_, _, err = suite.RunMatrix(t.Context(), suite.MatrixConfig{Scenarios: []string{"slow", "typo"}, Start: fs.start})
	if err == nil || !strings.Contains(err.Error(), `unknown scenario "typo"`) || !strings.Contains(err.Error(), "masters-down-3") {
		t.Errorf("error %v, want the unknown scenario and the list", err)
	}
}

func TestExpected(t *testing.T) {
	tests := []struct {
		scenario, lock, endpoint string
		want                     string
		run                      bool
		reason                   string
	}{
		{"normal", "none", "sale", "OVERSOLD", true, ""},
		{"normal", "none", "testLock", "LOST UPDATES", true, ""},
		{"normal", "redlock", "sale", "SAFE", true, ""},
		{"single", "local", "sale", "SAFE", true, ""},
		{"slow", "lua", "sale", "OVERSOLD", true, ""},
		{"slow", "reentrant", "sale", "SAFE", true, ""},
		{"crash", "setnx", "sale", "DEADLOCK", true, ""},
		{"crash", "setnx", "testLock", "DEADLOCK", true, ""},
		{"crash-before-expire", "setnx-expire", "sale", "DEADLOCK", true, ""},
		{"crash-before-expire", "lua", "sale", "", false, "only setnx-expire has a point between SETNX and EXPIRE"},
		{"check-pause", "check-del", "sale", "OVERSOLD", true, ""},
		{"pause", "fenced", "sale", "SAFE", true, ""},
		{"pause", "reentrant", "sale", "OVERSOLD", true, ""},
		{"skew", "getset", "sale", "OVERSOLD", true, ""},
		{"masters-down-3", "redlock", "sale", "SAFE", true, ""},
		{"masters-down", "lua", "sale", "", false, "only redlock and redsync-redlock use the masters"},
		{"slow", "redislock", "sale", "OVERSOLD", true, ""},
		{"slow", "redislock-refresh", "sale", "SAFE", true, ""},
		{"pause", "redislock-refresh", "sale", "OVERSOLD", true, ""},
		{"pause-session", "etcd-mutex", "sale", "OVERSOLD", true, ""},
		{"backend-restart", "zk-lock", "sale", "DEADLOCK", true, ""},
		{"majority-crash", "redsync-redlock", "sale", "OVERSOLD", true, ""},
		{"majority-crash-aof", "redsync-redlock", "sale", "SAFE", true, ""},
		{"session-cut", "pg-advisory", "sale", "OVERSOLD", true, ""},
		{"session-cut", "pg-advisory-xact", "testLock", "LOST UPDATES", true, ""},
		{"session-cut", "pg-advisory-fenced", "sale", "SAFE", true, ""},
		{"session-cut", "lua", "sale", "", false, "only the PostgreSQL rungs' locks are sessions the lab cuts (ZooKeeper's and etcd's sessions lapse under pause-session)"},
		{"pause-session", "pg-advisory", "sale", "SAFE", true, ""},
		{"pause", "rueidislock", "sale", "OVERSOLD", true, ""},
		{"slow", "rueidislock", "sale", "SAFE", true, ""},
		{"slow", "none", "sale", "", false, "unsafe with no fault at all: shown in normal"},
		{"normal", "nope", "sale", "", false, "not in the ladder's table"},
	}
	for _, tt := range tests {
		v, run, reason := scenarioNamed(t, tt.scenario).Expected(tt.lock, tt.endpoint)
		if v != tt.want || run != tt.run || reason != tt.reason {
			t.Errorf("%s %s/%s: %q %v %q; want %q %v %q", tt.scenario, tt.lock, tt.endpoint, v, run, reason, tt.want, tt.run, tt.reason)
		}
	}
	// 122 pairs in all, every lock of the ladder in normal.
	n := 0
	for _, s := range suite.Scenarios() {
		n += len(s.Expect)
		for l := range s.Expect {
			if !slices.Contains(suite.LadderLocks(), l) {
				t.Errorf("%s expects a verdict for %q, not a lock of the ladder", s.Name, l)
			}
		}
	}
	if n != 122 {
		t.Errorf("%d pairs, want 122", n)
	}
}
