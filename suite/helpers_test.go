package suite_test

import (
	"os"
	"testing"
)

// The helpers of package bench's tests that the suites' tests need too.

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
