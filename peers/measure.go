package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// roundTrips counts what a client sends: one per command, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// row is one contender's figures, a line of the table and of the JSON.
type row struct {
	Name     string  `json:"name"`
	Via      string  `json:"via"` // direct, or nginx (proxy: the Go stand-in)
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
	// Verdict is bench's, for a run through the load balancer.
	Verdict string `json:"verdict,omitempty"`
}

// measure runs one contender on a fresh client and counter: c goroutines
// take operations until n have been done.
func measure(ctx context.Context, addr string, redisPid int, masterAddrs []string, cfg config, ct contender) (row, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: cfg.password, PoolSize: cfg.c + 32, MaxRetries: -1})
	defer rdb.Close()
	masters := make([]*redis.Client, len(masterAddrs))
	for i, a := range masterAddrs {
		masters[i] = redis.NewClient(&redis.Options{Addr: a, Password: cfg.password, PoolSize: cfg.c + 32, MaxRetries: -1})
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
	rtt := float64(rt.n.Load()) / float64(cfg.n)
	if ct.ownClient {
		rtt = -1
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return row{
		Name: ct.name, Via: "direct", Settings: ct.settings, Ops: cfg.n, OK: ok.Load(), Failed: failed.Load(),
		Counter: counter, Exact: counter == ok.Load(),
		Seconds: took.Seconds(), OpsPerS: float64(ok.Load()) / took.Seconds(),
		P50ms: ms(lat[len(lat)/2]), P99ms: ms(lat[len(lat)*99/100]), MaxMs: ms(lat[len(lat)-1]),
		RTTPerOp: rtt,
		RedisCPU: 100 * redisCPU.Seconds() / took.Seconds(),
		SelfCPU:  100 * selfCPU.Seconds() / took.Seconds(),
	}, nil
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

// startProfile starts a CPU profile into path; the function returned stops it.
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
