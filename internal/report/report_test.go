package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/report"
)

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		codes map[string]int
		want  string
	}{
		{map[string]int{"error": 1, "503": 2, "409": 4000, "502": 0}, "409:4000 503:2 error:1"},
		{map[string]int{"conn": 1, "5xx": 1, "503 lock": 2, "502": 1}, "502:1 503 lock:2 5xx:1 conn:1"},
		{nil, "-"},
		{map[string]int{"503": 0}, "-"},
	} {
		if got := report.Counts(tc.codes); got != tc.want {
			t.Errorf("Counts(%v) = %q, want %q", tc.codes, got, tc.want)
		}
	}
}

func TestAligned(t *testing.T) {
	var b strings.Builder
	report.Aligned(&b, [][]string{{"lock", "ok"}, nil, {"lua", "1000"}, {"fenced", "9"}}, func(i int) bool { return i == 1 })
	want := "lock      ok\n------  ----\nlua     1000\nfenced     9\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestMs(t *testing.T) {
	if got := report.Ms(1234567 * time.Nanosecond); got != 1.235 {
		t.Errorf("Ms = %v, want 1.235", got)
	}
	if report.MsCell(9.999) != "10.00" || report.MsCell(12.34) != "12.3" {
		t.Errorf("MsCell: %s %s", report.MsCell(9.999), report.MsCell(12.34))
	}
}

// A second report of the same stem gets "-2" and the first stays; latest
// is the newest.
func TestWriteFilesNeverOverwrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	j1, m1, err := report.WriteFiles(dir, "x-1", "x-latest", []byte("{1}"), []byte("# 1"))
	if err != nil {
		t.Fatal(err)
	}
	j2, m2, err := report.WriteFiles(dir, "x-1", "x-latest", []byte("{2}"), []byte("# 2"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(j1) != "x-1.json" || filepath.Base(m1) != "x-1.md" || filepath.Base(j2) != "x-1-2.json" || filepath.Base(m2) != "x-1-2.md" {
		t.Errorf("paths %s %s %s %s", j1, m1, j2, m2)
	}
	for path, want := range map[string]string{j1: "{1}", m2: "# 2", filepath.Join(dir, "x-latest.json"): "{2}"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", path, b, err, want)
		}
	}
}
