package explore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/explore"
)

// scripted plays a game of up to n moves on name, taking at move i the
// (i mod k)-th of the k moves offered (so every client and fault gets
// its turn), and returns the moves.
func scripted(tb testing.TB, name string, n int) (explore.Target, []string) {
	tb.Helper()
	tg, err := explore.Lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	var moves []string
	for len(moves) < n {
		g, err := explore.Play(context.Background(), tg, clientsOf(tg), moves)
		if err != nil {
			tb.Fatal(err)
		}
		if len(g.Next) == 0 {
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
	return tg, moves
}

// BenchmarkGameMove plays a scripted game of up to 50 moves, one answer
// per move as the page asks (each replays the moves so far), and reports
// each move's answer time at the 50th and 99th percentile.
func BenchmarkGameMove(b *testing.B) {
	for _, name := range []string{"fair", "check-del", "redlock"} {
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

func clientsOf(t explore.Target) int {
	if t.MaxClients > 0 {
		return min(3, t.MaxClients)
	}
	return 3
}
