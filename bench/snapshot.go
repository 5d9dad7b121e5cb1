package bench

import (
	"maps"
	"time"

	"github.com/lockladder/lockladder/internal/report"
)

// Snapshot is a run's figures so far, while its requests are answered.
type Snapshot struct {
	Lock     string         `json:"lock"`
	Endpoint string         `json:"endpoint"`
	Total    int            `json:"total"`     // requests the run will send
	Done     int            `json:"done"`      // answers so far
	OK       int            `json:"ok"`        // 200s so far
	Codes    map[string]int `json:"codes"`     // every answer by status ("0": no answer)
	Elapsed  float64        `json:"elapsed_s"` // since the first request
	RPS      float64        `json:"rps"`       // answers a second so far
	P50Ms    float64        `json:"p50_ms"`
	P99Ms    float64        `json:"p99_ms"`
	MaxMs    float64        `json:"max_ms"`
}

// snapshot reads the run's metrics so far (on collect's goroutine, the
// only one that adds to them).
func (a *attack) snapshot() Snapshot {
	el := time.Since(a.tg.start)
	s := Snapshot{
		Lock: a.row.Lock, Endpoint: a.row.Endpoint, Total: a.total,
		Done: int(a.m.Requests), OK: a.m.StatusCodes["200"], Codes: maps.Clone(a.m.StatusCodes),
		Elapsed: el.Seconds(),
	}
	if s.Elapsed > 0 {
		s.RPS = float64(s.Done) / s.Elapsed
	}
	if s.Done > 0 {
		s.P50Ms = report.Ms(a.m.Latencies.Quantile(0.5))
		s.P99Ms = report.Ms(a.m.Latencies.Quantile(0.99))
		s.MaxMs = report.Ms(a.m.Latencies.Max)
	}
	return s
}
