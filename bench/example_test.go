package bench_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// What cmd/bench does: the classic ab -n 5000 -c 100 against every lock the
// app offers, a table on the terminal, reports under results/.
func ExampleRun() {
	cfg := bench.Config{
		URL:         "http://127.0.0.1:8080",
		Requests:    5000,
		Concurrency: 100,
		Stock:       1000,
		Progress:    os.Stderr,
	}
	started := time.Now()
	rows, err := bench.Run(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := bench.WriteTable(os.Stdout, rows); err != nil {
		log.Fatal(err)
	}
	meta := bench.NewMeta(cfg, started)
	meta.Notes = append(meta.Notes, "3 app instances behind nginx, one Redis")
	if _, _, err := bench.WriteReports("results", rows, meta); err != nil {
		log.Fatal(err)
	}
}

func ExampleJudge() {
	r := bench.Row{Endpoint: "sale", OK: 4870, Initial: 1000, Remaining: 0}
	bench.Judge(&r)
	fmt.Println(r.Verdict, r.Oversold)

	r = bench.Row{Endpoint: "testLock", OK: 5000, Num: 5000}
	bench.Judge(&r)
	fmt.Println(r.Verdict, r.LostUpdates)
	// Output:
	// OVERSOLD 3870
	// SAFE 0
}
