package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/contract"
	"github.com/lockladder/lockladder/fault"
	"github.com/lockladder/lockladder/internal/redistest"
)

func TestMain(m *testing.M) {
	ResumeIfAsked() // StopProcess re-runs this test binary as the resumer
	if v, ok := os.LookupEnv(writerEnv); ok {
		writeWhenStopped(v)
	}
	os.Exit(m.Run())
}

func TestParsePlan(t *testing.T) {
	cases := []struct {
		query string
		want  plan
		err   string
	}{
		{"", plan{}, ""},
		{"work=300ms", plan{Work: 300 * time.Millisecond}, ""},
		{"fault=crash", plan{Kind: crash}, ""},
		{"fault=crash-before-expire", plan{Kind: crashBeforeExpire}, ""},
		{"fault=check-pause&pause=600ms", plan{Kind: checkPause, Pause: 600 * time.Millisecond}, ""},
		{"fault=pause&pause=1s&work=5ms", plan{Kind: pause, Pause: time.Second, Work: 5 * time.Millisecond}, ""},
		{"fault=pause&pause=800ms&until=written", plan{Kind: pause, Pause: 800 * time.Millisecond, Until: true}, ""},
		{"fault=check-pause&pause=600ms&until=taken", plan{Kind: checkPause, Pause: 600 * time.Millisecond, UntilTaken: true}, ""},
		{"fault=pause&pause=800ms&until=later", plan{}, `until: "later" is neither "written"`},
		{"fault=check-pause&pause=800ms&until=written", plan{}, "until: written only with fault=pause"},
		{"fault=pause&pause=800ms&until=taken", plan{}, "taken only with fault=check-pause"},
		{"until=written", plan{}, "until: written only with fault=pause"},
		{"takeover=40ms", plan{Takeover: 40 * time.Millisecond}, ""},
		{"takeover=40ms&fault=crash", plan{Takeover: 40 * time.Millisecond, Kind: crash}, ""},
		{"takeover=0s", plan{}, "takeover: 0 is out of range"},
		{"takeover=soon", plan{}, `takeover: "soon" is not a duration`},
		{"work=", plan{}, "work: empty"},
		{"work=300", plan{}, "not a duration"},
		{"work=abc", plan{}, "not a duration"},
		{"work=0s", plan{}, "out of range"},
		{"work=-1s", plan{}, `work: "-1s" is not a duration`},
		{"work=-0", plan{}, `work: "-0" is not a duration`},
		{"work=+5ms", plan{}, `work: " 5ms" is not a duration`}, // a query's + is a space
		{"work=%2B5ms", plan{}, `work: "+5ms" is not a duration`},
		{"work=05ms", plan{}, `work: "05ms" is not a duration`},
		{"work=11s", plan{}, "out of range"},
		{"work=9999999999h", plan{}, "not a duration"},
		{"fault=explode", plan{}, `unknown fault "explode"`},
		{"fault=", plan{}, "unknown fault"},
		{"fault=pause", plan{}, "needs pause="},
		{"fault=check-pause", plan{}, "needs pause="},
		{"fault=crash&pause=1s", plan{}, "takes no pause"},
		{"pause=1s", plan{}, "only with fault="},
		{"skew=2s", plan{Skew: 2 * time.Second}, ""},
		{"skew=2s&work=5ms", plan{Skew: 2 * time.Second, Work: 5 * time.Millisecond}, ""},
		{"skew=0s", plan{}, "skew: 0 is out of range"},
		{"skew=-2s", plan{}, `skew: "-2s" is not a duration`},
		{"skew=11s", plan{}, "skew: 11s is out of range"},
		{"skew=ahead", plan{}, `skew: "ahead" is not a duration`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := parsePlan(q)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestInjectorStrikesOnlyAtItsPoint: each fault acts at its one point and
// nowhere else.
func TestInjectorStrikesOnlyAtItsPoint(t *testing.T) {
	type record struct{ exits, stops, sleeps []string }
	points := []fault.Point{fault.Acquired, fault.BeforeExpire, fault.BeforeDelete, fault.Expired, fault.Business}
	cases := []struct {
		plan plan
		want record
	}{
		{plan{}, record{}},
		{plan{Kind: crash}, record{sleeps: []string{"acquired until alone, at most 1s"}, exits: []string{"acquired"}}},
		{plan{Kind: crashBeforeExpire}, record{exits: []string{"before-expire"}}},
		{plan{Kind: checkPause, Pause: time.Second}, record{sleeps: []string{"before-delete 1s"}}},
		{plan{Kind: checkPause, Pause: time.Second, UntilTaken: true}, record{sleeps: []string{"before-delete 1s", "before-delete until taken, at most 1s"}}},
		{plan{Kind: pause, Pause: time.Second}, record{stops: []string{"business 1s"}}},
		{plan{Kind: pause, Pause: time.Second, Until: true}, record{stops: []string{"business 1s until k written"}}},
		{plan{Work: time.Millisecond}, record{sleeps: []string{"business 1ms"}}},
		{plan{Takeover: 40 * time.Millisecond}, record{sleeps: []string{"expired 40ms"}}},
	}
	for _, tc := range cases {
		var got record
		var at fault.Point
		in := tc.plan.injector(FaultActions{
			Exit: func(code int) { got.exits = append(got.exits, string(at)) },
			Stop: func(d time.Duration) { got.stops = append(got.stops, string(at)+" "+d.String()) },
			StopUntil: func(d time.Duration, w Written) {
				got.stops = append(got.stops, string(at)+" "+d.String()+" until "+w.Key+" written")
			},
			Sleep: func(d time.Duration) { got.sleeps = append(got.sleeps, string(at)+" "+d.String()) },
		}, watch{
			Written: Written{Key: "k"},
			Taken: func(bound time.Duration) {
				got.sleeps = append(got.sleeps, string(at)+" until taken, at most "+bound.String())
			},
			Alone: func(bound time.Duration) {
				got.sleeps = append(got.sleeps, string(at)+" until alone, at most "+bound.String())
			},
		}, func(err error) { t.Error(err) })
		ctx := fault.With(context.Background(), in)
		for _, p := range points {
			at = p
			fault.Inject(ctx, p)
		}
		if strings.Join(got.exits, ",") != strings.Join(tc.want.exits, ",") ||
			strings.Join(got.stops, ",") != strings.Join(tc.want.stops, ",") ||
			strings.Join(got.sleeps, ",") != strings.Join(tc.want.sleeps, ",") {
			t.Errorf("%+v: got %+v, want %+v", tc.plan, got, tc.want)
		}
	}
	fault.Inject(context.Background(), fault.Acquired) // no injector: nothing happens
}

// TestStopProcessStopsEverything stops this very process: a goroutine that
// counts milliseconds must not count during the stop.
func TestStopProcessStopsEverything(t *testing.T) {
	var ticks atomic.Int64
	done := make(chan struct{})
	go func() {
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-tk.C:
				ticks.Add(1)
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	const pause = 300 * time.Millisecond
	start := time.Now()
	before := ticks.Load()
	if err := StopProcess(pause); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	counted := ticks.Load() - before
	if elapsed < pause {
		t.Fatalf("StopProcess returned after %s, want at least %s", elapsed, pause)
	}
	// A ticker drops ticks while its reader is stopped: during a real
	// process stop the counter barely moves, though wall time passed.
	if counted > int64((elapsed-pause)/time.Millisecond)+5 {
		t.Fatalf("the goroutine counted %d ms ticks in %s: the process was not stopped for %s", counted, elapsed, pause)
	}
	t.Logf("stopped: %s wall, %d ticks counted", elapsed, counted)
}

// writerEnv makes this test binary the writer of
// TestStopProcessUntilWritten: it waits until the process named stops,
// then for the delay, and INCRs the counter, noting the stopped
// process's state just before.
const writerEnv = "LOCKLADDER_TEST_WRITER"

// writeWhenStopped is the writer's whole life.
func writeWhenStopped(v string) {
	var job struct {
		Pid   int
		Delay time.Duration
		W     Written
	}
	if err := json.Unmarshal([]byte(v), &job); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(2)
	}
	rdb := redis.NewClient(&redis.Options{Addr: job.W.Addrs[0], Username: job.W.Username, Password: job.W.Password, MaxRetries: -1})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	waitStopped(job.Pid)
	time.Sleep(job.Delay)
	state := "running"
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", job.Pid)); err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			state = "stopped"
		}
	}
	ctx := context.Background()
	rdb.Set(ctx, job.W.Key+":state", state, 0)
	rdb.Incr(ctx, job.W.Key)
	os.Exit(0)
}

// TestStopProcessUntilWritten: with until=written, the process stays
// stopped past pause= until another process has written the counter (a
// writer that writes 200ms after the pause's end finds it still stopped),
// and without a write, until twice pause=. On a real redis-server: the
// resumer is another process, and this one, embedded Redis and all, is
// stopped.
func TestStopProcessUntilWritten(t *testing.T) {
	redistest.NeedServer(t, "redis-server")
	rdb, _ := redistest.Start(t)
	ctx := context.Background()

	t.Run("written", func(t *testing.T) {
		w, ok := writtenOf(rdb, "item:sold")
		if !ok {
			t.Fatal("no watch of a *redis.Client")
		}
		const pause, delay = 2 * time.Second, 2200 * time.Millisecond
		job, _ := json.Marshal(map[string]any{"Pid": os.Getpid(), "Delay": delay, "W": w})
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), writerEnv+"="+string(job))
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready, _ := bufio.NewReader(out).ReadString('\n')
		if ready != "ready\n" {
			t.Fatalf("writer: %q", ready)
		}
		start := time.Now()
		if err := StopProcessUntil(pause, &w); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
		state, _ := rdb.Get(ctx, "item:sold:state").Result()
		n, _ := rdb.Get(ctx, "item:sold").Int()
		if state != "stopped" || n != 1 {
			t.Fatalf("the writer found this process %q and the counter is %d after %s; want it stopped until the write, and 1", state, n, elapsed)
		}
		t.Logf("stopped %s: pause= %s, the write %s after the stop", elapsed, pause, delay)
	})

	t.Run("bound", func(t *testing.T) {
		w, _ := writtenOf(rdb, "item:num")
		const pause = 300 * time.Millisecond
		start := time.Now()
		if err := StopProcessUntil(pause, &w); err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed < 2*pause {
			t.Fatalf("with no write, stopped %s; want twice pause=, %s", elapsed, 2*pause)
		}
	})
}

// TestTakenByWaitsForANewHolder: until=taken's wait returns once the lock
// key holds a token it did not hold at the last look, not before; with no
// new holder, at its bound.
func TestTakenByWaitsForANewHolder(t *testing.T) {
	rdb, _ := redistest.Start(t)
	ctx := context.Background()
	rdb.Set(ctx, "lock", "A", 0)
	done := make(chan struct{})
	go func() {
		takenBy(ctx, rdb, "lock", time.Minute)
		close(done)
	}()
	// Still A, then gone: nobody new has taken it.
	select {
	case <-done:
		t.Fatal("returned while the lock still held the token it first saw")
	case <-time.After(50 * time.Millisecond):
	}
	rdb.Del(ctx, "lock")
	select {
	case <-done:
		t.Fatal("returned when the lock was freed, not taken")
	case <-time.After(50 * time.Millisecond):
	}
	rdb.Set(ctx, "lock", "B", 0)
	<-done // a minute's bound: only a new holder ends it sooner

	start := time.Now()
	takenBy(ctx, rdb, "lock", 100*time.Millisecond)
	if e := time.Since(start); e < 100*time.Millisecond {
		t.Fatalf("no new holder, returned after %s; want its bound", e)
	}
}

// TestAloneWaitsForTheInstancesOtherHolders: a crash waits while another
// request of its instance holds the same lock (a double grant's other
// half), not for holders of other keys, and exits once that one is over.
func TestAloneWaitsForTheInstancesOtherHolders(t *testing.T) {
	rec := contract.NewRecorder(16)
	rec.Hold(contract.Section{Key: "lock"}) // the crashing request's own
	rec.Hold(contract.Section{Key: "other"})
	start := time.Now()
	alone(rec, "lock", time.Minute)
	if e := time.Since(start); e > 10*time.Second {
		t.Fatalf("waited %s for the holder of another key", e)
	}

	over := rec.Hold(contract.Section{Key: "lock"}) // the second holder
	done := make(chan struct{})
	go func() {
		alone(rec, "lock", time.Minute)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("returned while another request of the instance held the lock")
	case <-time.After(50 * time.Millisecond):
	}
	over(contract.Section{Key: "lock"})
	<-done // a minute's bound: only the other holder's end ends it sooner

	rec.Hold(contract.Section{Key: "lock"}) // held for good
	start = time.Now()
	alone(rec, "lock", 100*time.Millisecond)
	if e := time.Since(start); e < 100*time.Millisecond {
		t.Fatalf("another holder still in, returned after %s; want its bound", e)
	}
}
