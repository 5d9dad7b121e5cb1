package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// report is one run of every contender, as the JSON file has it.
type report struct {
	Started string `json:"started"`
	Commit  string `json:"commit,omitempty"`
	// Stack is the through-nginx part's stack, a line per server.
	Stack []string `json:"stack,omitempty"`
	Redis string   `json:"redis"`
	Go    string   `json:"go"`
	CPUs  int      `json:"cpus"`
	N     int      `json:"n"`
	C     int      `json:"c"`
	TTL   string   `json:"ttl"`
	Bound string   `json:"bound"`
	Rows  []row    `json:"rows"`
}

func (r report) markdown() string {
	var b strings.Builder
	commit := ""
	if r.Commit != "" {
		commit = ", commit " + r.Commit
	}
	fmt.Fprintf(&b, "%d operations of GET+SET under each lock, %d concurrent, against one %s (%s, %d CPUs), %s%s\n\n",
		r.N, r.C, r.Redis, r.Go, r.CPUs, r.Started, commit)
	fmt.Fprintln(&b, "| lock | via | ops/s | p50 ms | p99 ms | max ms | failed | rtt/op | redis cpu | client cpu | exact |")
	fmt.Fprintln(&b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, x := range r.Rows {
		exact := "yes"
		switch {
		case x.Via != "direct" && !x.Exact:
			exact = x.Verdict
		case !x.Exact:
			exact = fmt.Sprintf("NO (counter %d, ok %d)", x.Counter, x.OK)
		}
		rtt := "-"
		if x.RTTPerOp >= 0 {
			rtt = fmt.Sprintf("%.2f", x.RTTPerOp)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f | %.2f | %.2f | %d | %s | %s | %s | %s |\n",
			x.Name, x.Via, x.OpsPerS, x.P50ms, x.P99ms, x.MaxMs, x.Failed, rtt, pct(x.RedisCPU), pct(x.SelfCPU), exact)
	}
	byName := map[string]*row{} // the direct rows: the targets are theirs
	for i := range r.Rows {
		if r.Rows[i].Via == "direct" {
			byName[r.Rows[i].Name] = &r.Rows[i]
		}
	}
	versus := func(ours, theirs string, x, lower float64) {
		a, b2 := byName[ours], byName[theirs]
		if a == nil || b2 == nil || b2.OpsPerS <= 0 || a.P99ms <= 0 {
			return
		}
		met := func(got, want float64) string {
			if got >= want {
				return "met"
			}
			return "not met"
		}
		up, down := a.OpsPerS/b2.OpsPerS, b2.P99ms/a.P99ms
		fmt.Fprintf(&b, "\n%s vs %s: %.2fx the throughput (target >= %gx: %s), p99 %.1fx lower (target >= %gx: %s)",
			ours, theirs, up, x, met(up, x), down, lower, met(down, lower))
	}
	versus("fair", "redsync-10ms", 3, 10)
	versus("cohort", "redsync-10ms", 5, 20)
	versus("cohort-carry", "redsync-10ms", 5, 20)
	versus("redlock", "redsync-5", 2, 4)
	versus("redlock-cohort", "redsync-5", 2, 4)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "\nrtt/op: Redis round trips per operation (a command or a pipeline each), the lock's and the GET and SET's; - where the lock talks through a client of its own (rueidis, pgx), which this count does not see.")
	fmt.Fprintln(&b, "redis cpu, client cpu: CPU time during the run, in % of one core, of redis-server and of this process.")
	fmt.Fprintln(&b, "via direct: this process calls the lock; via nginx: 3 app instances behind nginx serve GET /testLock with the lock, ops/s counting their 200s,")
	fmt.Fprintln(&b, "the latency a whole HTTP request's, failed the non-200s, exact bench's verdict; round trips and CPU are the app's, not measured there (-).")
	if len(r.Stack) > 0 {
		fmt.Fprintln(&b, "\nThe stack behind nginx:")
		for _, l := range r.Stack {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	fmt.Fprintln(&b, "\nSettings:")
	for _, x := range r.Rows {
		fmt.Fprintf(&b, "- %s (%s): %s\n", x.Name, x.Via, x.Settings)
	}
	return b.String()
}

func pct(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v)
}

// write writes the report into out as peers-<time>.json and .md, the
// Markdown being table; "" out writes nothing.
func (r report) write(out string, started time.Time, table string) error {
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(out, "peers-"+started.Format("20060102-150405"))
	js, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(table), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s.md and .json\n", base)
	return nil
}
