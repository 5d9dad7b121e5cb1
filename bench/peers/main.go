// Command peers measures the lab's locks against two published Go Redis
// locks, go-redsync/redsync v4 and bsm/redislock, in one run, against one
// redis-server it starts itself on a free loopback port, plus five
// independent masters for the Redlock contenders (redsync over all five,
// with its defaults, and the lab's redlock).
//
// Every contender runs the same critical section, the articles' /testLock:
// take the lock, GET a counter, SET it one higher, give the lock up. N
// operations are spread over C goroutines (the ab -n 5000 -c 100 shape). A
// row reports operations per second, the latency of one operation (from
// asking for the lock to having released it: p50, p99, max), how many
// failed to get the lock within the bound, Redis round trips per
// operation, and whether the counter ends equal to the successes (exact).
//
// It is its own Go module so that the lab does not depend on its peers.
//
//	go run . -n 5000 -c 100 -out ../../results
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/stack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// config is one run's sizes and bounds.
type config struct {
	n, c     int
	ttl      time.Duration // every lock's lease
	bound    time.Duration // how long one operation may wait for its lock
	retry    time.Duration // the fixed sleep of redsync, redislock and lua-fixed
	pipeline bool          // lua and fair release in the pipeline of the SET
}

func run() error {
	var (
		cfg        config
		out        = flag.String("out", "results", "directory for peers-<time>.md and .json (\"\": none)")
		only       = flag.String("only", "", "comma-separated contenders to run (default: all)")
		embedded   = flag.Bool("embedded", false, "allow the embedded miniredis when redis-server is not installed (its figures mean little)")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the -profile contender's run to this file")
		profile    = flag.String("profile", "fair", "which contender -cpuprofile profiles")
	)
	flag.IntVar(&cfg.n, "n", 5000, "operations per contender")
	flag.IntVar(&cfg.c, "c", 100, "concurrent goroutines")
	flag.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "lock lease")
	flag.DurationVar(&cfg.bound, "bound", 30*time.Second, "how long one operation may wait for its lock before it counts as failed")
	flag.DurationVar(&cfg.retry, "retry", 10*time.Millisecond, "fixed retry sleep of redsync, redislock and lua-fixed")
	flag.BoolVar(&cfg.pipeline, "pipeline", true, "the lab's lua and fair locks release in the same pipeline as the SET")
	flag.Parse()
	if flag.NArg() > 0 || cfg.n <= 0 || cfg.c <= 0 {
		return fmt.Errorf("usage: peers [-n N] [-c C] [-out DIR] [-only a,b]")
	}

	ctx := context.Background()
	mode := stack.Real
	if *embedded {
		mode = stack.Auto
	}
	srv, err := stack.StartRedis(ctx, "127.0.0.1:0", mode, !*embedded, nil)
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	defer srv.Stop()
	version := "redis-server"
	if srv.Embedded() {
		version = "embedded miniredis"
	} else if v, err := redisVersion(ctx, srv.Addr()); err == nil {
		version = "redis-server " + v
	}

	masters, err := startMasters(ctx, mode, !*embedded)
	if err != nil {
		return err
	}
	defer func() {
		for _, m := range masters {
			m.Stop()
		}
	}()
	var masterAddrs []string
	for _, m := range masters {
		masterAddrs = append(masterAddrs, m.Addr())
	}

	all := contenders(cfg)
	if *only != "" {
		want := strings.Split(*only, ",")
		all = slices.DeleteFunc(all, func(c contender) bool { return !slices.Contains(want, c.name) })
		if len(all) == 0 {
			return fmt.Errorf("-only %q names no contender", *only)
		}
	}

	started := time.Now()
	fmt.Printf("%d operations, %d concurrent, one %s at %s (and %d masters for the Redlocks), %s %s/%s, %d CPUs; lease %s, bound %s\n\n",
		cfg.n, cfg.c, version, srv.Addr(), len(masters), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cfg.ttl, cfg.bound)
	var rows []row
	for _, ct := range all {
		var stop func()
		if *cpuprofile != "" && ct.name == *profile {
			if stop, err = startProfile(*cpuprofile); err != nil {
				return err
			}
		}
		r, err := measure(ctx, srv.Addr(), srv.Pid(), masterAddrs, cfg, ct)
		if stop != nil {
			stop()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", ct.name, err)
		}
		rows = append(rows, r)
		fmt.Fprintf(os.Stderr, "  %s done\n", ct.name)
	}

	rep := report{
		Started: started.UTC().Format(time.RFC3339), Redis: version, Go: runtime.Version(),
		CPUs: runtime.NumCPU(), N: cfg.n, C: cfg.c, TTL: cfg.ttl.String(), Bound: cfg.bound.String(),
		Rows: rows,
	}
	table := rep.markdown()
	fmt.Print(table)
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(*out, "peers-"+started.Format("20060102-150405"))
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(table), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s.md and .json\n", base)
	return nil
}

// contender is one lock under test: setup builds, over a fresh client, the
// function that runs one critical section (false: the lock was not had
// within the bound).
type contender struct {
	name, settings string
	setup          func(rdb *redis.Client, masters []*redis.Client) (op func(ctx context.Context, key string) (bool, error), closeFn func())
}

// critical is the business: GET the counter, SET it one higher. then, if
// not nil, queues more commands behind the SET (a release), in one round
// trip.
func critical(ctx context.Context, rdb *redis.Client, key string, then func(redis.Pipeliner)) error {
	n, err := rdb.Get(ctx, key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if then == nil {
		return rdb.Set(ctx, key, n+1, 0).Err()
	}
	var set *redis.StatusCmd
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.Set(ctx, key, n+1, 0)
		then(p)
		return nil
	})
	return set.Err()
}

// atomicIncr is the ceiling: the same GET and SET, in one script.
var atomicIncr = redis.NewScript(`
-- KEYS[1] counter. GET, add one, SET: what every lock above protects.
local n = tonumber(redis.call("GET", KEYS[1]) or "0") + 1
redis.call("SET", KEYS[1], n)
return n`)

func contenders(cfg config) []contender {
	labLock := func(name, settings string, mk func(rdb *redis.Client, masters []*redis.Client, n *lock.Notifier) lock.Locker) contender {
		return contender{name: name, settings: settings, setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
			if err := lock.EnableKeyspaceEvents(context.Background(), rdb); err != nil {
				panic(err)
			}
			n := lock.NewNotifier(rdb, lock.NotifierOptions{})
			<-n.Ready()
			l := mk(rdb, masters, n)
			return func(ctx context.Context, key string) (bool, error) {
				held, err := l.Obtain(ctx, "lock:"+key, lock.Call{})
				if errors.Is(err, lock.ErrNotObtained) {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				pr, ok := held.(lock.PipelineReleaser)
				if !cfg.pipeline || !ok {
					err = critical(ctx, rdb, key, nil)
					if rerr := held.Release(ctx); err == nil {
						err = rerr
					}
					return true, err
				}
				var released func() error
				err = critical(ctx, rdb, key, func(p redis.Pipeliner) { released = pr.ReleaseIn(ctx, p) })
				if released == nil {
					released = func() error { return held.Release(ctx) }
				}
				if rerr := released(); err == nil {
					err = rerr
				}
				return true, err
			}, func() { n.Close() }
		}}
	}
	opts := func(n *lock.Notifier, m lock.WaitMode) lock.Options {
		return lock.Options{TTL: cfg.ttl, Wait: cfg.bound, WaitMode: m, Retry: lock.FixedSleep(cfg.retry), Notifier: n}
	}
	pipe := ""
	if cfg.pipeline {
		pipe = "; release pipelined with the SET"
	}
	return []contender{
		{name: "redsync", settings: fmt.Sprintf("v4.18.1, one pool; WithExpiry(%s), WithRetryDelay(%s), WithTries(unbounded: the %s bound ends it)", cfg.ttl, cfg.retry, cfg.bound),
			setup: func(rdb *redis.Client, _ []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				rs := redsync.New(goredis.NewPool(rdb))
				return func(ctx context.Context, key string) (bool, error) {
					m := rs.NewMutex("lock:"+key, redsync.WithExpiry(cfg.ttl), redsync.WithRetryDelay(cfg.retry), redsync.WithTries(1<<30))
					if err := m.LockContext(ctx); err != nil {
						if errors.Is(err, redsync.ErrFailed) || ctx.Err() != nil {
							return false, nil
						}
						return false, err
					}
					err := critical(ctx, rdb, key, nil)
					if _, uerr := m.UnlockContext(ctx); err == nil {
						err = uerr
					}
					return true, err
				}, func() {}
			}},
		{name: "redislock", settings: fmt.Sprintf("v0.9.4; ttl %s, RetryStrategy LinearBackoff(%s), until the %s bound", cfg.ttl, cfg.retry, cfg.bound),
			setup: func(rdb *redis.Client, _ []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				locker := redislock.New(rdb)
				o := &redislock.Options{RetryStrategy: redislock.LinearBackoff(cfg.retry)}
				return func(ctx context.Context, key string) (bool, error) {
					l, err := locker.Obtain(ctx, "lock:"+key, cfg.ttl, o)
					if errors.Is(err, redislock.ErrNotObtained) || ctx.Err() != nil {
						return false, nil
					}
					if err != nil {
						return false, err
					}
					err = critical(ctx, rdb, key, nil)
					if rerr := l.Release(ctx); err == nil {
						err = rerr
					}
					return true, err
				}, func() {}
			}},
		labLock("lua-fixed", fmt.Sprintf("SET NX PX + Lua release; wait=fixed, sleep %s (the articles)%s", cfg.retry, pipe),
			func(rdb *redis.Client, _ []*redis.Client, n *lock.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitFixed))
			}),
		labLock("lua-backoff", "the same; wait=backoff, exponential 1ms..32ms, full jitter"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *lock.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitBackoff))
			}),
		labLock("lua-notify", "the same; wait=notify, woken over pub/sub by each release (fallback tick 100ms)"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *lock.Notifier) lock.Locker {
				return lock.NewLua(rdb, opts(n, lock.WaitNotify))
			}),
		labLock("fair", "FIFO queue in Redis, handoff in the release script, the waiter woken by name; fencing token, watchdog"+pipe,
			func(rdb *redis.Client, _ []*redis.Client, n *lock.Notifier) lock.Locker {
				return lock.NewFair(rdb, opts(n, ""))
			}),
		{name: "redsync-5", settings: "v4.18.1 over the 5 masters, its defaults: expiry 8s, 32 tries, a random 50-250ms between them",
			setup: func(rdb *redis.Client, masters []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				var pools []redsyncredis.Pool
				for _, m := range masters {
					pools = append(pools, goredis.NewPool(m))
				}
				rs := redsync.New(pools...)
				return func(ctx context.Context, key string) (bool, error) {
					m := rs.NewMutex("lock:" + key)
					if err := m.LockContext(ctx); err != nil {
						if errors.Is(err, redsync.ErrFailed) || ctx.Err() != nil || isTaken(err) {
							return false, nil
						}
						return false, err
					}
					err := critical(ctx, rdb, key, nil)
					if _, uerr := m.UnlockContext(ctx); err == nil {
						err = uerr
					}
					return true, err
				}, func() {}
			}},
		labLock("redlock", "the lab's rung 9 over the 5 masters: majority within validity; wait=queue, one contender per process",
			func(_ *redis.Client, masters []*redis.Client, _ *lock.Notifier) lock.Locker {
				cs := make([]redis.Cmdable, len(masters))
				for i, m := range masters {
					cs[i] = m
				}
				return lock.NewRedlock(cs, opts(nil, ""), lock.RedlockOptions{})
			}),
		{name: "atomic", settings: "no lock: the GET and SET in one Lua script (the ceiling)",
			setup: func(rdb *redis.Client, _ []*redis.Client) (func(context.Context, string) (bool, error), func()) {
				return func(ctx context.Context, key string) (bool, error) {
					return true, atomicIncr.Run(ctx, rdb, []string{key}).Err()
				}, func() {}
			}},
	}
}

// isTaken reports whether redsync's error says the lock was held by
// another (it returns that, not ErrFailed, when its last try saw so).
func isTaken(err error) bool {
	var taken *redsync.ErrTaken
	var node *redsync.ErrNodeTaken
	return errors.As(err, &taken) || errors.As(err, &node)
}

// startMasters starts the Redlock contenders' five independent masters.
func startMasters(ctx context.Context, mode stack.Mode, requireReal bool) ([]*stack.Redis, error) {
	var ms []*stack.Redis
	for range 5 {
		m, err := stack.StartRedis(ctx, "127.0.0.1:0", mode, requireReal, nil)
		if err != nil {
			for _, x := range ms {
				x.Stop()
			}
			return nil, fmt.Errorf("start a master: %w", err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// roundTrips counts what a client sends: one per command, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

type row struct {
	Name     string  `json:"name"`
	Settings string  `json:"settings"`
	Ops      int     `json:"ops"`
	OK       int64   `json:"ok"`
	Failed   int64   `json:"failed"`
	Counter  int64   `json:"counter"`
	Exact    bool    `json:"exact"`
	Seconds  float64 `json:"seconds"`
	OpsPerS  float64 `json:"ops_per_s"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	RTTPerOp float64 `json:"rtt_per_op"`
	// CPU used during the run, in % of one core: redis-server's, and
	// this process's (the clients and the locks' goroutines). -1: unknown.
	RedisCPU float64 `json:"redis_cpu_pct"`
	SelfCPU  float64 `json:"client_cpu_pct"`
}

// measure runs one contender on a fresh client and counter: c goroutines
// take operations until n have been done.
func measure(ctx context.Context, addr string, redisPid int, masterAddrs []string, cfg config, ct contender) (row, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: cfg.c + 32, MaxRetries: -1})
	defer rdb.Close()
	masters := make([]*redis.Client, len(masterAddrs))
	for i, a := range masterAddrs {
		masters[i] = redis.NewClient(&redis.Options{Addr: a, PoolSize: cfg.c + 32, MaxRetries: -1})
		defer masters[i].Close()
	}
	key := "peers:" + ct.name
	if err := rdb.Del(ctx, key, "lock:"+key).Err(); err != nil {
		return row{}, err
	}
	op, closeFn := ct.setup(rdb, masters)
	defer closeFn()

	// Warm up: scripts loaded, connections dialled. Not measured.
	var wg sync.WaitGroup
	for range cfg.c {
		wg.Go(func() { _, _ = op(ctx, key+":warm") })
	}
	wg.Wait()

	rt := &roundTrips{}
	rdb.AddHook(rt)
	for _, m := range masters {
		m.AddHook(rt) // a command to each of five masters is five round trips
	}
	var (
		next, ok, failed atomic.Int64
		firstErr         atomic.Value
		lat              = make([]time.Duration, cfg.n)
	)
	start := time.Now()
	redis0, self0 := cpuTime(redisPid), cpuTime(os.Getpid())
	for range cfg.c {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.n) {
					return
				}
				octx, cancel := context.WithTimeout(ctx, cfg.bound)
				t0 := time.Now()
				got, err := op(octx, key)
				lat[i] = time.Since(t0)
				cancel()
				switch {
				case err != nil:
					firstErr.CompareAndSwap(nil, err)
					failed.Add(1)
				case got:
					ok.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	redisCPU, selfCPU := cpuTime(redisPid)-redis0, cpuTime(os.Getpid())-self0
	if err, _ := firstErr.Load().(error); err != nil {
		fmt.Fprintf(os.Stderr, "  %s: first error: %v\n", ct.name, err)
	}
	counter, err := rdb.Get(ctx, key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return row{}, err
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return row{
		Name: ct.name, Settings: ct.settings, Ops: cfg.n, OK: ok.Load(), Failed: failed.Load(),
		Counter: counter, Exact: counter == ok.Load(),
		Seconds: took.Seconds(), OpsPerS: float64(ok.Load()) / took.Seconds(),
		P50ms: ms(lat[len(lat)/2]), P99ms: ms(lat[len(lat)*99/100]), MaxMs: ms(lat[len(lat)-1]),
		RTTPerOp: float64(rt.n.Load()) / float64(cfg.n),
		RedisCPU: 100 * redisCPU.Seconds() / took.Seconds(),
		SelfCPU:  100 * selfCPU.Seconds() / took.Seconds(),
	}, nil
}

type report struct {
	Started string `json:"started"`
	Redis   string `json:"redis"`
	Go      string `json:"go"`
	CPUs    int    `json:"cpus"`
	N       int    `json:"n"`
	C       int    `json:"c"`
	TTL     string `json:"ttl"`
	Bound   string `json:"bound"`
	Rows    []row  `json:"rows"`
}

func (r report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations of GET+SET under each lock, %d concurrent, against one %s (%s, %d CPUs), %s\n\n",
		r.N, r.C, r.Redis, r.Go, r.CPUs, r.Started)
	fmt.Fprintln(&b, "| lock | ops/s | p50 ms | p99 ms | max ms | failed | rtt/op | redis cpu | client cpu | exact |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, x := range r.Rows {
		exact := "yes"
		if !x.Exact {
			exact = fmt.Sprintf("NO (counter %d, ok %d)", x.Counter, x.OK)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.2f | %.2f | %d | %.2f | %s | %s | %s |\n",
			x.Name, x.OpsPerS, x.P50ms, x.P99ms, x.MaxMs, x.Failed, x.RTTPerOp, pct(x.RedisCPU), pct(x.SelfCPU), exact)
	}
	byName := map[string]*row{}
	for i := range r.Rows {
		byName[r.Rows[i].Name] = &r.Rows[i]
	}
	versus := func(ours, theirs string, x, lower float64) {
		a, b2 := byName[ours], byName[theirs]
		if a == nil || b2 == nil || b2.OpsPerS <= 0 || a.P99ms <= 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s vs %s: %.1fx the throughput (target >= %gx), p99 %.1fx lower (target >= %gx)",
			ours, theirs, a.OpsPerS/b2.OpsPerS, x, b2.P99ms/a.P99ms, lower)
	}
	versus("fair", "redsync", 3, 10)
	versus("redlock", "redsync-5", 2, 4)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "\nrtt/op: Redis round trips per operation (a command or a pipeline each), the lock's and the GET and SET's.")
	fmt.Fprintln(&b, "redis cpu, client cpu: CPU time during the run, in % of one core, of redis-server and of this process.")
	fmt.Fprintln(&b, "\nSettings:")
	for _, x := range r.Rows {
		fmt.Fprintf(&b, "- %s: %s\n", x.Name, x.Settings)
	}
	return b.String()
}

func pct(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v)
}

// cpuTime is the user+system CPU time of process pid so far, from
// /proc/<pid>/stat (Linux; -1s elsewhere).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 0 {
		return -time.Second
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -time.Second
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

func redisVersion(ctx context.Context, addr string) (string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", io.EOF
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
