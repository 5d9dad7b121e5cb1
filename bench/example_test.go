package bench_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/lockladder/lockladder/bench"
)

// What cmd/bench does, on a small scale: runs of the classic ab test
// against the locks the app offers, each judged from the counters read
// back, then the reports. Here the app is the fake the package's tests
// serve (fakeApp: "none" reads, sleeps and writes; "atomic" sells under a
// mutex); cmd/bench points URL at the stack's load balancer, with 5000
// requests, 100 at a time, a stock of 1000, and prints bench.WriteTable.
func ExampleRun() {
	app := httptest.NewServer(&fakeApp{strategies: []string{"none", "atomic"}, raceDelay: time.Millisecond})
	defer app.Close()
	cfg := bench.Config{
		URL:         app.URL,
		Locks:       []string{"none", "atomic"},
		Requests:    300,
		Concurrency: 30,
		Stock:       100,
	}
	started := time.Now()
	rows, err := bench.Run(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		switch {
		case r.Verdict != bench.VerdictSafe: // how much varies from run to run
			fmt.Printf("%-6s %-8s %s\n", r.Lock, r.Endpoint, r.Verdict)
		case r.Endpoint == bench.EndpointSale:
			fmt.Printf("%-6s %-8s %s: %d sold of %d, %d left, %d answered 409\n", r.Lock, r.Endpoint, r.Verdict, r.OK, r.Initial, r.Remaining, r.Codes["409"])
		default:
			fmt.Printf("%-6s %-8s %s: %d increments, num %d\n", r.Lock, r.Endpoint, r.Verdict, r.OK, r.Num)
		}
	}

	dir, err := os.MkdirTemp("", "bench-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	meta := bench.NewMeta(cfg, started)
	meta.Notes = append(meta.Notes, "the package's fake app")
	js, md, err := bench.WriteReports(dir, rows, meta)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reports:", filepath.Ext(js), filepath.Ext(md))
	// Output:
	// none   sale     OVERSOLD
	// none   testLock LOST UPDATES
	// atomic sale     SAFE: 100 sold of 100, 0 left, 200 answered 409
	// atomic testLock SAFE: 300 increments, num 300
	// reports: .json .md
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
