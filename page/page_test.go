package page_test

import (
	"bytes"
	"errors"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockladder/lockladder/lock"
	"github.com/lockladder/lockladder/page"
)

func site() *page.Site {
	return page.New(page.Config{Instance: "app1", Rungs: func() []lock.Info {
		return []lock.Info{{Name: "none"}, {Name: "lua", Lease: true}, {Name: "setnx"}}
	}})
}

func render(t *testing.T, f func(*bytes.Buffer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every step of the course has its code: each cut found in its file, each
// fix's line found in the next step's code, each source named.
func TestCourseBuilds(t *testing.T) {
	s := site()
	for _, st := range page.Course {
		out := render(t, func(b *bytes.Buffer) error { return s.Step(b, st.Lock) })
		if !strings.Contains(out, `class="ln`) {
			t.Errorf("/learn/%s shows no code", st.Lock)
		}
		if st.Fix != "" && !strings.Contains(out, `class="fix"`) {
			t.Errorf("/learn/%s shows no line for its fix %q", st.Lock, st.Fix)
		}
	}
	if err := s.Step(&bytes.Buffer{}, "no-such-rung"); !errors.Is(err, page.ErrNoStep) {
		t.Errorf("a step that is not: %v, want ErrNoStep", err)
	}
	welcome := render(t, func(b *bytes.Buffer) error { return s.Welcome(b) })
	if !strings.Contains(welcome, `href="/learn/none"`) || !strings.Contains(welcome, `href="/lab"`) {
		t.Error("the welcome links neither step 1 nor the lab")
	}
}

var lineRE = regexp.MustCompile(`(?s)<figure class="listing" data-file="([^"]+)">.*?</figure>`)
var codeLineRE = regexp.MustCompile(`<span class="ln[^"]*" data-line="(\d+)"><span class="no" aria-hidden="true">\d+</span><span class="mk"></span>(?:<span class="sr">[^<]*</span>)*<span class="tx">([^<]*)</span></span>`)

// The code /learn/lua shows is the lines of lock/ it comes from, as they
// are in the files: each line at its number.
func TestLuaShowsItsFiles(t *testing.T) {
	out := render(t, func(b *bytes.Buffer) error { return site().Step(b, "lua") })
	figures := lineRE.FindAllStringSubmatch(out, -1)
	if len(figures) != 3 {
		t.Fatalf("/learn/lua shows %d listings, want 3 (Try, Release, the release script)", len(figures))
	}
	var funcs []string
	for _, f := range figures {
		file := f[1]
		src, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		shown := codeLineRE.FindAllStringSubmatch(f[0], -1)
		if len(shown) < 3 {
			t.Fatalf("%s: %d lines shown", file, len(shown))
		}
		for _, l := range shown {
			n, _ := strconv.Atoi(l[1])
			if got := html.UnescapeString(l[2]); n < 1 || n > len(lines) || got != lines[n-1] {
				t.Errorf("%s:%d shown as %q, the file has %q", file, n, got, lines[n-1])
			}
			if strings.HasPrefix(lines[n-1], "func ") {
				funcs = append(funcs, lines[n-1])
			}
		}
	}
	for _, want := range []string{"func (l Lua) Try(", "func (l *luaLock) Release("} {
		if !strings.Contains(strings.Join(funcs, "\n"), want) {
			t.Errorf("/learn/lua does not show %s (shown: %q)", want, funcs)
		}
	}
	// what changed from check-del: the release's script, marked new
	if !regexp.MustCompile(`class="ln new"[^>]*>.*luaRelease\.Run`).MatchString(out) {
		t.Error("/learn/lua does not mark its release script's call as new")
	}
}

// The lab writes what servers answered as text: the table of races is
// built of text nodes, never from markup (innerHTML) made of the answers.
func TestLabTableIsText(t *testing.T) {
	lab := render(t, func(b *bytes.Buffer) error { return site().Lab(b) })
	start := strings.Index(lab, "function redrawCompare(")
	if start < 0 {
		t.Fatal("the lab has no redrawCompare")
	}
	body := lab[start:]
	if end := strings.Index(body, "\n}\n"); end >= 0 {
		body = body[:end+2]
	}
	if strings.Contains(body, "innerHTML") || !strings.Contains(body, "textContent") {
		t.Errorf("redrawCompare writes markup, not text:\n%s", body)
	}
}

// No page's script builds markup from strings.
func TestScriptsWriteText(t *testing.T) {
	files, _ := filepath.Glob("*.js")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("innerHTML")) || bytes.Contains(b, []byte("insertAdjacentHTML")) {
			t.Errorf("%s writes markup", f)
		}
	}
}
