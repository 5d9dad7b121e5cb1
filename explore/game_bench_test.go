package explore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/explore"
)

// scripted plays a game of up to n moves on name, taking at move i the
// (i mod k)-th of the k moves offered (so every client and fault gets
// its turn), and returns the moves.
func scripted(tb testing.TB, name string, n int) (explore.Target, []string) {
	tb.Helper()
	tg, moves, _ := scriptedGames(tb, name, n)
	return tg, moves
}

// scriptedGames is scripted, with the game after each prefix of the
// moves: games[k] after moves[:k], the last after them all.
func scriptedGames(tb testing.TB, name string, n int) (explore.Target, []string, []explore.Game) {
	tb.Helper()
	tg, err := explore.Lookup(name)
	if err != nil {
		// The libraries on one Redis, which the game offers too.
		if tg, err = explore.LookupAny(name); err != nil {
			tb.Fatal(err)
		}
	}
	var moves []string
	var games []explore.Game
	for {
		g, err := explore.Play(context.Background(), tg, clientsOf(tg), moves)
		if err != nil {
			tb.Fatal(err)
		}
		games = append(games, g)
		if len(g.Next) == 0 || len(moves) == n {
			break
		}
		// Every client and fault gets its turn, the faults less often
		// (a crash ends a client's game).
		var plain []string
		for _, o := range g.Next {
			if !strings.HasPrefix(o.Move, "crash") && !strings.HasPrefix(o.Move, "pause") || len(moves)%9 == 8 {
				plain = append(plain, o.Move)
			}
		}
		if len(plain) == 0 {
			plain = []string{g.Next[0].Move}
		}
		moves = append(moves, plain[len(moves)%len(plain)])
	}
	return tg, moves, games
}

// BenchmarkGameMove plays a scripted game of up to 50 moves, one answer
// per move as the page asks (each replays the moves so far), and reports
// each move's answer time at the 50th and 99th percentile.
func BenchmarkGameMove(b *testing.B) {
	for _, name := range []string{"fair", "check-del", "redlock", "cohort"} {
		b.Run(name, func(b *testing.B) {
			tg, moves := scripted(b, name, 50)
			var times []time.Duration
			b.ResetTimer()
			for range b.N {
				for k := 1; k <= len(moves); k++ {
					start := time.Now()
					if _, err := explore.Play(context.Background(), tg, clientsOf(tg), moves[:k]); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(start))
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(len(moves)), "moves/game")
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms/move")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms/move")
		})
	}
}

// BenchmarkGameMoveUnderLoad plays a scripted 50-move game on each lock,
// one answer per move as the page asks, while a real redis-server serves
// a load beside it: loadClients goroutines in this process each looping
// the app's sale under setnx-px's lock (SET NX PX, GET, SET and INCR in
// one pipeline, DEL) as fast as it answers. It reports each move's
// answer time at the 50th and 99th percentile, and the sales the load
// made a second meanwhile (the two share the machine's cores).
func BenchmarkGameMoveUnderLoad(b *testing.B) {
	p, stop, err := explore.StartReplayer(context.Background(), io.Discard, os.Getenv("CI") == "true")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	if p == nil {
		b.Skip("no redis-server: the load needs one")
	}
	for _, name := range []string{"check-del", "fair", "cohort", "redlock", "redsync-redlock"} {
		b.Run(name, func(b *testing.B) {
			tg, moves := scripted(b, name, 50)
			ctx, cancel := context.WithCancel(context.Background())
			sales, wg := serveLoad(ctx, b, p.Addr)
			var times []time.Duration
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for k := 1; k <= len(moves); k++ {
					t0 := time.Now()
					if _, err := explore.Play(context.Background(), tg, clientsOf(tg), moves[:k]); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(t0))
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			wg.Wait()
			if sales.Load() == 0 {
				b.Fatal("the load made no sale")
			}
			slices.Sort(times)
			b.ReportMetric(float64(len(moves)), "moves/game")
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms/move")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms/move")
			b.ReportMetric(float64(times[len(times)-1].Microseconds())/1000, "max-ms/move")
			b.ReportMetric(float64(sales.Load())/elapsed.Seconds(), "load-sales/s")
		})
	}
}

// loadClients is how many goroutines serve the load beside a game.
const loadClients = 8

// serveLoad loops the app's sale under setnx-px's lock on the Redis at
// addr from loadClients goroutines until ctx ends, counting the sales.
func serveLoad(ctx context.Context, b *testing.B, addr string) (*atomic.Int64, *sync.WaitGroup) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: loadClients})
	if err := rdb.Set(ctx, "load:stock", 1<<40, 0).Err(); err != nil {
		b.Fatal(err)
	}
	sales := new(atomic.Int64)
	wg := new(sync.WaitGroup)
	for i := range loadClients {
		wg.Go(func() {
			token := fmt.Sprint("load-", i)
			for ctx.Err() == nil {
				ok, err := rdb.SetNX(ctx, "load:lock", token, 2*time.Second).Result()
				if err != nil || !ok {
					continue
				}
				if n, err := rdb.Get(ctx, "load:stock").Int64(); err == nil {
					pipe := rdb.TxPipeline()
					pipe.Set(ctx, "load:stock", n-1, 0)
					pipe.Incr(ctx, "load:sold")
					if _, err := pipe.Exec(ctx); err == nil {
						sales.Add(1)
					}
				}
				rdb.Del(context.WithoutCancel(ctx), "load:lock")
			}
		})
	}
	context.AfterFunc(ctx, func() { wg.Wait(); _ = rdb.Close() })
	return sales, wg
}

func clientsOf(t explore.Target) int {
	if t.MaxClients > 0 {
		return min(3, t.MaxClients)
	}
	return 3
}
