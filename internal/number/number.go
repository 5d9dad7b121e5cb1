// Package number is the one parser of the numbers the lab takes in a
// request (stock=, skus=, n=, c=, since=, limit=, lease_ms=) and of its
// durations (try=, lease=, work=, pause=, skew=): each written one way
// only. A whole number is decimal digits with no sign and no leading
// zero ("0" is one); a duration is Go's (300ms, 1.5s, 1m30s), its
// numbers written the same way, or "0". Nothing else is read as a
// number: not "+1", not "-0", not "007", not "" (an empty n= is not
// "the default"), not "1e3", not " 5". Every error names the parameter.
package number

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Error is a value that is not a number of the lab's, or one out of its
// range: Param names the parameter.
type Error struct {
	Param string
	Why   string
}

func (e *Error) Error() string { return e.Param + ": " + e.Why }

// Whole parses v, parameter name's value, as a whole number in [lo, hi].
func Whole(name, v string, lo, hi int64) (int64, error) {
	if v == "" {
		return 0, &Error{name, "empty: give a whole number"}
	}
	if !digits(v) || (len(v) > 1 && v[0] == '0') {
		return 0, &Error{name, fmt.Sprintf("%q is not a whole number (digits only: no sign, no leading zero)", truncate(v, 32))}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, &Error{name, fmt.Sprintf("%s is out of range [%d, %d]", truncate(v, 32), lo, hi)}
	}
	return n, nil
}

// Duration parses v, parameter name's value, as a duration in [lo, hi].
func Duration(name, v string, lo, hi time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, &Error{name, "empty: give a duration (e.g. 500ms)"}
	}
	if !canonical(v) {
		return 0, &Error{name, fmt.Sprintf("%q is not a duration (e.g. 500ms, 1.5s; no sign, no leading zero)", truncate(v, 32))}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, &Error{name, fmt.Sprintf("%q is not a duration (e.g. 500ms)", truncate(v, 32))}
	}
	if d < lo || d > hi {
		return 0, &Error{name, fmt.Sprintf("%s is out of range [%s, %s]", d, lo, hi)}
	}
	return d, nil
}

// units are time.ParseDuration's.
var units = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// canonical reports whether v is "0" or a run of NUMBER UNIT, each
// NUMBER digits without a leading zero (but "0"), with a fraction or not.
func canonical(v string) bool {
	if v == "0" {
		return true
	}
	for v != "" {
		i := 0
		for i < len(v) && '0' <= v[i] && v[i] <= '9' {
			i++
		}
		if i == 0 || (i > 1 && v[0] == '0') {
			return false
		}
		v = v[i:]
		if strings.HasPrefix(v, ".") {
			j := 1
			for j < len(v) && '0' <= v[j] && v[j] <= '9' {
				j++
			}
			if j == 1 {
				return false
			}
			v = v[j:]
		}
		unit := ""
		for _, u := range units {
			if strings.HasPrefix(v, u) && len(u) > len(unit) {
				unit = u
			}
		}
		if unit == "" {
			return false
		}
		v = v[len(unit):]
	}
	return true
}

func digits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
