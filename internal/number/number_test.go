package number_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockladder/lockladder/internal/number"
)

// TestWhole: digits only, no sign, no leading zero, not empty, in range;
// the error names the parameter.
func TestWhole(t *testing.T) {
	for v, want := range map[string]int64{"0": 0, "1": 1, "1000": 1000, "9223372036854775807": 9223372036854775807} {
		if got, err := number.Whole("n", v, 0, 1<<63-1); err != nil || got != want {
			t.Errorf("Whole(%q): %d %v, want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "+1", "-0", "-1", "00", "01", "0000000000000000000001", " 5", "5 ", "1e3", "0x10", "1_000", "1.5", "١", "9223372036854775808", "1001"} {
		_, err := number.Whole("stock", v, 0, 1000)
		var ne *number.Error
		if err == nil || !errors.As(err, &ne) || ne.Param != "stock" || !strings.HasPrefix(err.Error(), "stock: ") {
			t.Errorf("Whole(%q): %v, want an error naming stock", v, err)
		}
	}
	if _, err := number.Whole("skus", "0", 1, 10); err == nil {
		t.Error("0 taken for a range from 1")
	}
}

// TestDuration: Go's durations, written one way: no sign, no leading
// zero, not empty; "0" is one.
func TestDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{"0": 0, "0s": 0, "500ms": 500 * time.Millisecond, "1.5s": 1500 * time.Millisecond,
		"0.5s": 500 * time.Millisecond, "1m30s": 90 * time.Second, "250us": 250 * time.Microsecond, "250µs": 250 * time.Microsecond} {
		if got, err := number.Duration("try", v, 0, time.Hour); err != nil || got != want {
			t.Errorf("Duration(%q): %s %v, want %s", v, got, err, want)
		}
	}
	for _, v := range []string{"", "-0", "+0", "-1s", "+1s", "01s", "00", "0001ms", "5", ".5s", "1.s", "1sec", " 1s", "1s ", "1e3ms", "2h", "1s-1ms"} {
		_, err := number.Duration("try", v, 0, time.Hour)
		if err == nil || !strings.HasPrefix(err.Error(), "try: ") {
			t.Errorf("Duration(%q): %v, want an error naming try", v, err)
		}
	}
}
