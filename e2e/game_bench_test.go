package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockladder/lockladder/bench"
	"github.com/lockladder/lockladder/race"
	"github.com/lockladder/lockladder/stack"
)

// gameRungs are the rungs BenchmarkGameThroughTheStack plays; GAME_LOCKS
// (a comma-separated list) chooses others.
var gameRungs = []string{"check-del", "lua", "fair", "cohort", "redlock", "fenced",
	"redsync", "redislock", "redislock-refresh", "redsync-redlock"}

// BenchmarkGameThroughTheStack is the game as a learner plays it, through
// the whole stack: real redis-server, three app instances, nginx, the
// race server, every move a POST /play through nginx carrying the moves
// so far, while the stack serves `make bench`'s load beside it (bench.Run
// from a process of its own through the same nginx, every rung the stack
// offers in turn, the sale and testLock, gameLoad requests each at
// gameConc workers, over and over until the games end). Each rung's game
// is scripted: at move i the (i mod k)-th of the k moves offered (the
// faults less often, a crash ending a client's part), up to 50 moves;
// b.N plays it again from the first move. It reports each answer's time
// at the 50th and 99th percentile and at most, the CPU this process (the
// race server's) spent a move, and the load's answered requests a second
// meanwhile. make bench-game runs it.
func BenchmarkGameThroughTheStack(b *testing.B) {
	st := startBenchStack(b)
	rungs := gameRungs
	if v := os.Getenv("GAME_LOCKS"); v != "" {
		rungs = strings.Split(v, ",")
	}
	load := startGameLoad(b, st)
	defer load.stop(b)
	load.started(b)
	client := &http.Client{Timeout: 30 * time.Second}
	for _, name := range rungs {
		b.Run(name, func(b *testing.B) {
			var times []time.Duration
			var moves []string
			before, cpu0 := load.answered(), processCPU()
			start := time.Now()
			ask := func(played []string) gameAnswer {
				t0 := time.Now()
				g := postMoves(b, client, st.URL(), name, played)
				times = append(times, time.Since(t0))
				return g
			}
			b.ResetTimer()
			// The first game finds its moves as it goes; the others
			// replay them from the first.
			for g := ask(nil); len(moves) < 50 && len(g.Next) > 0; g = ask(moves) {
				moves = append(moves, scriptedMove(g.Next, len(moves)))
			}
			for range b.N - 1 {
				for k := range len(moves) + 1 {
					ask(moves[:k])
				}
			}
			b.StopTimer()
			elapsed := time.Since(start)
			slices.Sort(times)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(float64(len(moves)), "moves/game")
			b.ReportMetric(ms(times[len(times)/2]), "p50-ms/move")
			b.ReportMetric(ms(times[len(times)*99/100]), "p99-ms/move")
			b.ReportMetric(ms(times[len(times)-1]), "max-ms/move")
			b.ReportMetric(float64(load.answered()-before)/elapsed.Seconds(), "load-req/s")
			// The process's CPU per answer (the race server is in it, the
			// load is not): what a move costs, against what it waited.
			b.ReportMetric(ms(processCPU()-cpu0)/float64(len(times)), "cpu-ms/move")
		})
	}
}

// processCPU is this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scriptedMove is the game's scripted choice at move i among next: every
// client and fault gets its turn, a crash or a pause only every ninth
// move (a crash ends a client's game), as explore's own benchmark.
func scriptedMove(next []gameOption, i int) string {
	var plain []string
	for _, o := range next {
		if !strings.HasPrefix(o.Move, "crash") && !strings.HasPrefix(o.Move, "pause") || i%9 == 8 {
			plain = append(plain, o.Move)
		}
	}
	if len(plain) == 0 {
		return next[0].Move
	}
	return plain[i%len(plain)]
}

type gameOption struct {
	Move string `json:"move"`
}

type gameAnswer struct {
	Next    []gameOption `json:"next"`
	Verdict string       `json:"verdict"`
	Error   string       `json:"error"`
}

// postMoves asks the stack for the state moves reach on lock, as the
// page does.
func postMoves(b *testing.B, client *http.Client, base, lock string, moves []string) gameAnswer {
	b.Helper()
	body, _ := json.Marshal(map[string]any{"lock": lock, "moves": append([]string{}, moves...)})
	req, _ := http.NewRequest(http.MethodPost, base+"/play", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatalf("%s %v: %v", lock, moves, err)
	}
	defer resp.Body.Close()
	var g gameAnswer
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s %v: %s %v %s", lock, moves, resp.Status, err, g.Error)
	}
	return g
}

// The load beside the games: bench.Run's runs, one after the other, in a
// process of its own, as make bench is beside a stack (the test binary
// again, running TestGameLoadProcess): in the benchmark's process its
// goroutines would share the race server's Go scheduler, which make
// bench's never do.
const (
	gameLoad = bench.DefaultRequests
	gameConc = bench.DefaultConcurrency
	// gameLoadEnv carries the stack's URL to the load's process, and
	// gameLoadKeyEnv its run key (the Redis password: a child's
	// environment is its user's alone).
	gameLoadEnv    = "LOCKLADDER_GAME_LOAD"
	gameLoadKeyEnv = "LOCKLADDER_GAME_LOAD_KEY"
)

type gameLoader struct {
	cmd   *exec.Cmd
	done  chan struct{}
	mu    sync.Mutex
	total int // answered requests of the finished runs
	now   int // and of the run under way, so far
	runs  []string
}

func (l *gameLoader) answered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total + l.now
}

// started waits for the load's first answers.
func (l *gameLoader) started(b *testing.B) {
	for deadline := time.Now().Add(time.Minute); l.answered() == 0; time.Sleep(50 * time.Millisecond) {
		select {
		case <-l.done:
			b.Fatal("the load's process ended before its first answer")
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("the load answered nothing in a minute")
		}
	}
}

func (l *gameLoader) stop(b *testing.B) {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	<-l.done
	_ = l.cmd.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total+l.now == 0 {
		b.Errorf("the load answered no request")
	}
	b.Logf("the load: %d runs of %d requests at %d workers (%s)", len(l.runs), gameLoad, gameConc, strings.Join(l.runs, ", "))
}

// startGameLoad starts the load's process against st, counting its
// answers from the lines it prints.
func startGameLoad(b *testing.B, st *stack.Stack) *gameLoader {
	cmd := exec.Command(os.Args[0], "-test.run=^TestGameLoadProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), gameLoadEnv+"="+st.URL(), gameLoadKeyEnv+"="+st.RedisPassword())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("the load's process: %v", err)
	}
	l := &gameLoader{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var n int
			var name string
			var rps float64
			l.mu.Lock()
			if _, err := fmt.Sscanf(sc.Text(), "load: answered %d", &n); err == nil {
				l.now = n
			} else if _, err := fmt.Sscanf(sc.Text(), "load: run %s %d %f", &name, &n, &rps); err == nil {
				l.total += n
				l.now = 0
				l.runs = append(l.runs, fmt.Sprintf("%s %.0f req/s", name, rps))
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// TestGameLoadProcess is BenchmarkGameThroughTheStack's load, in the
// process it starts: make bench's runs against the stack named in
// gameLoadEnv, every rung it offers in turn, again and again until
// SIGTERM, each run's answers printed as they come. Run on its own, it
// skips.
func TestGameLoadProcess(t *testing.T) {
	url := os.Getenv(gameLoadEnv)
	if url == "" {
		t.Skip("the load of BenchmarkGameThroughTheStack, in a process of its own")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	for ctx.Err() == nil {
		locks, err := strategies(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		// One lock and endpoint a bench.Run, so that a SIGTERM ends
		// within one run's requests.
		for _, run := range runsOf(locks) {
			rows, err := bench.Run(ctx, bench.Config{
				RunKey: os.Getenv(gameLoadKeyEnv), URL: url, Locks: run[:1], Endpoints: run[1:],
				Requests: gameLoad, Concurrency: gameConc,
				OnProgress: func(s bench.Snapshot) { fmt.Printf("load: answered %d\n", s.Done) },
			})
			for _, r := range rows {
				fmt.Printf("load: run %s/%s %d %.1f\n", r.Lock, r.Endpoint, r.Requests, r.RPS)
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runsOf are make bench's runs over locks: each lock's sale, then its
// testLock, as {lock, endpoint}.
func runsOf(locks []string) [][]string {
	var out [][]string
	for _, lk := range locks {
		out = append(out, []string{lk, bench.EndpointSale}, []string{lk, bench.EndpointTestLock})
	}
	return out
}

// strategies are the rungs the stack serves now (GET /strategies),
// those whose back end is missing left out.
func strategies(ctx context.Context, base string) ([]string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/strategies", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list []struct {
		Name        string `json:"name"`
		Unavailable string `json:"unavailable"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET /strategies: %v", err)
	}
	var names []string
	for _, s := range list {
		if s.Name != "" && s.Unavailable == "" {
			names = append(names, s.Name)
		}
	}
	return names, nil
}

// startBenchStack is startStack for a benchmark: real redis-server and
// nginx required (the figures are the real stack's), the race server
// serving /play.
func startBenchStack(b *testing.B) *stack.Stack {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{
		Dir: b.TempDir(), Instances: 3, LBAddr: "127.0.0.1:0", RedisAddr: "127.0.0.1:0",
		Redis: stack.Real, LB: stack.Real, RequireReal: true,
		AppBinary: appBinary, NginxConf: "../nginx.conf",
		Races: func(lb string, s *stack.Stack) http.Handler { return race.New(lb, s) },
	})
	if err != nil {
		b.Fatalf("start stack: %v", err)
	}
	b.Cleanup(func() {
		if err := st.Stop(); err != nil {
			b.Errorf("stop stack: %v", err)
		}
	})
	return st
}
