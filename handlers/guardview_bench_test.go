package handlers_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/lockladder/lockladder/handlers"
	"github.com/lockladder/lockladder/internal/redistest"
	"github.com/lockladder/lockladder/inventory"
	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/lock/ladder"
)

// BenchmarkSaleGuard is the cost of the run guard's check on the sale
// path (admitRun): POST /sale?lock=atomic on redis-server (miniredis
// without it), with the guard (Config.Redis set: the check, a cached
// view read again every 25 ms) and without (nothing checked).
func BenchmarkSaleGuard(b *testing.B) {
	gin.SetMode(gin.TestMode)
	rdb, _ := redistest.Start(b)
	for _, guarded := range []bool{false, true} {
		name := "unguarded"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			cfg := handlers.Config{
				Instance: "b-1", Inventory: inventory.New(rdb), MaxStock: 1 << 30, Hosts: []string{"example.com"},
				Ladder: ladder.New(ladder.Backends{Redis: rdb}, lock.Options{TTL: time.Second}, lock.RedlockOptions{}),
			}
			if guarded {
				cfg.Redis, cfg.RunKey = redis.Cmdable(rdb), "k"
			}
			app := handlers.New(cfg)
			reset := httptest.NewRequest("POST", "/reset?stock=1000000000", nil)
			app.ServeHTTP(httptest.NewRecorder(), reset)
			gets := func() float64 { // GETs Redis served so far: the guard's reads
				info := rdb.Info(context.Background(), "commandstats").Val()
				_, rest, _ := strings.Cut(info, "cmdstat_get:calls=")
				n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
				return float64(n)
			}
			before := gets()
			b.ResetTimer()
			defer func() { b.ReportMetric((gets()-before)/float64(b.N), "GETs/op") }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w := httptest.NewRecorder()
					app.ServeHTTP(w, httptest.NewRequest("POST", "/sale?lock=atomic", nil))
					if w.Code != 200 {
						b.Errorf("sale: %d %s", w.Code, w.Body)
						return
					}
				}
			})
		})
	}
}
