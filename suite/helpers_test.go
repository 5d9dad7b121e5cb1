package suite_test

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// The helpers of package bench's tests that the suites' tests need too.

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// checkJSONRows checks that the report rows carry the fields of a row.
func checkJSONRows(t *testing.T, rows []map[string]any, n int) {
	t.Helper()
	if len(rows) != n {
		t.Fatalf("got %d rows, want %d", len(rows), n)
	}
	for i, r := range rows {
		for _, k := range []string{
			"lock", "endpoint", "requests", "ok", "codes", "instances", "initial", "remaining", "sold", "num",
			"oversold", "lost_updates", "rps", "p50_ms", "p99_ms", "max_ms", "duration_ms", "verdict",
		} {
			if _, ok := r[k]; !ok {
				t.Errorf("row %d lacks %q: %v", i, k, r)
			}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeStock is the shop's counters, in memory instead of Redis. A sale
// or an increment is exact with no gap; with a gap it is the articles'
// read, sleep, write, and puts back whatever others did meanwhile.
type fakeStock struct {
	mu               sync.Mutex
	stock, sold, num int64
}

func (s *fakeStock) reset(stock int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stock, s.sold, s.num = stock, 0, 0
}

// counters is the body of GET /stock.
func (s *fakeStock) counters() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int64{"stock": s.stock, "sold": s.sold, "num": s.num}
}

// sell answers a sale: 200 and one item less, or 409 when none is left.
// sold counts every sale that wrote, as the app's does.
func (s *fakeStock) sell(w http.ResponseWriter, gap time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.stock
	if n <= 0 {
		writeJSON(w, http.StatusConflict, map[string]any{"sold": false, "remaining": 0})
		return
	}
	s.sleep(gap)
	s.stock = n - 1
	s.sold++
	writeJSON(w, http.StatusOK, map[string]any{"sold": true, "remaining": n - 1})
}

// sleep lets the others in for gap, between a read and its write.
func (s *fakeStock) sleep(gap time.Duration) {
	if gap > 0 {
		s.mu.Unlock()
		time.Sleep(gap)
		s.mu.Lock()
	}
}
