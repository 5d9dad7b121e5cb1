// Package report holds what the bench's reports and its suites' reports
// share: aligned text tables, Markdown tables, the cells they are made of,
// and report files that never overwrite an earlier one.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Aligned writes lines as columns two blanks apart, each as wide as its
// widest cell, right-aligned where right says so (nil: none); a nil line
// is a rule of dashes. No line ends in blanks.
func Aligned(w io.Writer, lines [][]string, right func(col int) bool) {
	var width []int
	for _, line := range lines {
		for i, s := range line {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	for _, line := range lines {
		var b strings.Builder
		for i, wd := range width {
			s := strings.Repeat("-", wd)
			if line != nil {
				s = line[i]
			}
			pad := strings.Repeat(" ", wd-utf8.RuneCountInString(s))
			if i > 0 {
				b.WriteString("  ")
			}
			if right != nil && right(i) {
				b.WriteString(pad + s)
			} else {
				b.WriteString(s + pad)
			}
		}
		io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n")
	}
}

// MarkdownHead writes a Markdown table's head and rule, the columns
// right-aligned where right says so (nil: none).
func MarkdownHead(w io.Writer, head []string, right func(col int) bool) {
	rule := make([]string, len(head))
	for i := range rule {
		rule[i] = "---"
		if right != nil && right(i) {
			rule[i] = "---:"
		}
	}
	MarkdownRow(w, head)
	MarkdownRow(w, rule)
}

// MarkdownRow writes one row of a Markdown table; the cells are written
// as they are (see MarkdownEscape).
func MarkdownRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// MarkdownEscape makes s safe in a table cell: no |, no newline, no
// backquote.
func MarkdownEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'").Replace(s)
}

// JSON writes v as indented JSON.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Counts lists outcomes by code, numeric ones ascending, then the others
// ("409:4000 503:2 error:1"), leaving out zeros; "-" when none is left.
func Counts(codes map[string]int) string {
	var b strings.Builder
	for _, k := range SortedCodes(codes) {
		if codes[k] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, codes[k])
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// SortedCodes returns the keys of codes: numeric statuses ascending, then
// the rest ("error") alphabetically.
func SortedCodes(codes map[string]int) []string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		switch {
		case errA == nil && errB == nil:
			return a < b
		case errA == nil || errB == nil:
			return errA == nil
		default:
			return keys[i] < keys[j]
		}
	})
	return keys
}

// Ms converts d to milliseconds, rounded to the microsecond, as the
// reports carry durations.
func Ms(d time.Duration) float64 { return Round(float64(d)/float64(time.Millisecond), 3) }

// Round rounds v to places decimals.
func Round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// MsCell shows milliseconds in a table: two decimals below 10, else one.
func MsCell(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
