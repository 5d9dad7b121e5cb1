package page

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"strings"
)

// The code a step shows is cut from the lab's own files (lockladder.Source)
// by name when the course is first served: a function or method of a Go
// file from its doc comment to its closing brace, or a whole script. The
// lines keep their numbers in the file, so a command's call site (the
// explorer's file and line) lands on the line a learner reads.

// Cut names a piece of source: File, a path from the module's root, and
// Func, "Type.Method" or "function" ("": the whole file).
type Cut struct{ File, Func string }

// Listing is a Cut read from the source.
type Listing struct {
	File, Func string
	Lang       string // "go" or "lua"
	Lines      []Line
}

// Line is one line of a listing.
type Line struct {
	N    int    // its number in the file
	Text string // as in the file, tabs and all
	// New: the step before did not have it; Next: the step after
	// changes it (neither on a comment, a blank line or a brace).
	New, Next bool
}

// Code says whether l is code a change may be marked on: not blank, not
// a comment, not a lone brace and not a function's signature (its
// receiver's type differs from rung to rung).
func (l Line) Code() bool {
	t := strings.TrimSpace(l.Text)
	return t != "" && !strings.HasPrefix(t, "//") && !strings.HasPrefix(t, "--") &&
		t != "}" && t != "{" && t != ")" && t != "end" && !strings.HasPrefix(t, "func ")
}

// Name is how a listing is captioned: its file, and its function.
func (l Listing) Name() string {
	if l.Func == "" {
		return l.File
	}
	return l.File + ": " + l.Func
}

// cut reads c from fsys.
func cut(fsys fs.FS, c Cut) (Listing, error) {
	src, err := fs.ReadFile(fsys, c.File)
	if err != nil {
		return Listing{}, fmt.Errorf("page: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	l := Listing{File: c.File, Func: c.Func, Lang: strings.TrimPrefix(path.Ext(c.File), ".")}
	from, to := 1, len(lines)
	if c.Func != "" {
		if l.Lang != "go" {
			return Listing{}, fmt.Errorf("page: %s: a function of a %s file", c.File, l.Lang)
		}
		if from, to, err = funcLines(c.File, src, c.Func); err != nil {
			return Listing{}, err
		}
	}
	for n := from; n <= to; n++ {
		l.Lines = append(l.Lines, Line{N: n, Text: lines[n-1]})
	}
	return l, nil
}

// funcLines finds name ("Type.Method" or "function") in a Go file: the
// first and last line of its declaration, its doc comment included.
func funcLines(file string, src []byte, name string) (from, to int, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return 0, 0, fmt.Errorf("page: %w", err)
	}
	recv, fn, ok := strings.Cut(name, ".")
	if !ok {
		recv, fn = "", name
	}
	for _, d := range f.Decls {
		fd, isFunc := d.(*ast.FuncDecl)
		if !isFunc || fd.Name.Name != fn || receiver(fd) != recv {
			continue
		}
		start := fd.Pos()
		if fd.Doc != nil {
			start = fd.Doc.Pos()
		}
		return fset.Position(start).Line, fset.Position(fd.End()).Line, nil
	}
	return 0, 0, fmt.Errorf("page: %s has no func %s", file, name)
}

// receiver is fd's receiver's type name, "" for a function.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// codeTexts is the set of the code lines of ls, trimmed.
func codeTexts(ls []Listing) map[string]bool {
	set := map[string]bool{}
	for _, l := range ls {
		for _, line := range l.Lines {
			if line.Code() {
				set[strings.TrimSpace(line.Text)] = true
			}
		}
	}
	return set
}

// mark marks in ls the code lines other lacks (New, when other is the
// step before; Next, when it is the step after), and reports how many.
func mark(ls []Listing, other []Listing, next bool) int {
	have := codeTexts(other)
	n := 0
	for i := range ls {
		for j := range ls[i].Lines {
			line := &ls[i].Lines[j]
			if line.Code() && !have[strings.TrimSpace(line.Text)] {
				n++
				if next {
					line.Next = true
				} else {
					line.New = true
				}
			}
		}
	}
	return n
}
