package bench_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/bench"
)

var update = flag.Bool("update", false, "rewrite docs/reading-results.md's generated key")

// docs/reading-results.md carries the whole key the terminal shortens
// (bench.ShortKey points there): the reports' legend, one source.
func TestFullKeyInDocs(t *testing.T) {
	const (
		path  = "../docs/reading-results.md"
		begin = "<!-- generated from bench's legend by `go test ./bench -run TestFullKeyInDocs -update`: edit that, not this -->\n"
		end   = "<!-- end of the generated key -->"
	)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated key", path)
	}
	want := bench.FullKey()
	if doc[i+len(begin):j] == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's key differs from bench's legend: run go test ./bench -run TestFullKeyInDocs -update", path)
}
