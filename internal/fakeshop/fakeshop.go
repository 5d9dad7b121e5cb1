// Package fakeshop is what the harness's tests (package bench's and
// package suite's) serve instead of the app: an item's counters in
// memory, sold and counted the articles' way, and the app's JSON answers.
// Each test's fake (bench's fakeApp, suite's fakeShop) decides which lock
// or fault loses updates; the item is the same for both. The helpers
// that read the reports back are here too.
package fakeshop

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// WriteJSON answers status with v as JSON, as the app does.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Item is one item's counters, in memory instead of Redis. A sale or an
// increment is exact with no gap; with a gap it is the articles' read,
// sleep, write, and puts back whatever others did meanwhile.
type Item struct {
	mu               sync.Mutex
	stock, sold, num int64
}

// NewItem is an item with stock left and nothing sold.
func NewItem(stock int64) *Item { return &Item{stock: stock} }

// Reset sets the stock and clears the counts, as POST /reset does.
func (s *Item) Reset(stock int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stock, s.sold, s.num = stock, 0, 0
}

// Counters is the body of GET /stock.
func (s *Item) Counters() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]int64{"stock": s.stock, "sold": s.sold, "num": s.num}
}

// Sell answers a sale: 200 and one item less, or 409 when none is left.
// sold counts every sale that wrote, as the app's does.
func (s *Item) Sell(w http.ResponseWriter, gap time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.stock
	if n <= 0 {
		WriteJSON(w, http.StatusConflict, map[string]any{"sold": false, "remaining": 0})
		return
	}
	s.sleep(gap)
	s.stock = n - 1
	s.sold++
	WriteJSON(w, http.StatusOK, map[string]any{"sold": true, "remaining": n - 1})
}

// Incr answers an increment of num (/testLock).
func (s *Item) Incr(w http.ResponseWriter, gap time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.num
	s.sleep(gap)
	s.num = n + 1
	WriteJSON(w, http.StatusOK, map[string]any{"num": n + 1})
}

// sleep lets the others in for gap, between a read and its write.
func (s *Item) sleep(gap time.Duration) {
	if gap > 0 {
		s.mu.Unlock()
		time.Sleep(gap)
		s.mu.Lock()
	}
}

// CheckJSONRows checks that a JSON report holds n rows, each with every
// field of a bench.Row the reports promise.
func CheckJSONRows(t testing.TB, rows []map[string]any, n int) {
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

// ReadFile is os.ReadFile that fails the test on an error.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
