package engine

import (
	"path"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// Site is the line of the lock's own code that sent a command: the
// caller's frame at the gate, the first one outside go-redis, the
// explorer and the runtime (for the lab's rungs, a file of lock/). So
// the page can mark, beside a schedule's step or a game's client, the
// line that step runs.
type Site struct {
	// File is the file's path from its module's root: lock/rung05_check_del.go
	// for the lab's own; module@version/path for another module's.
	File string `json:"file"`
	Line int    `json:"line"`
	// Func is the function: in the main module its package named by its
	// last element (lock.CheckDel.Try, lock.(*checkDelLock).Release),
	// else by its whole import path.
	Func string `json:"func"`
	// Via is the library's own frame that sent the command, when the
	// lock's code (File) called a library that did (redsync's mutex.go).
	Via *Site `json:"via,omitempty"`
}

// callers are the program counters of a gated command's callers, read
// at the gate and resolved into a Site only when a step is shown: the
// search, which shows none, pays for the read alone.
type callers struct {
	pcs [maxFrames]uintptr
	n   int
}

// maxFrames bounds the frames read at a gate: the rung's frame lies a
// few go-redis frames under it (a pipeline's, a dozen).
const maxFrames = 32

// readCallers reads the callers of the gate's caller.
func readCallers() *callers {
	c := &callers{}
	c.n = runtime.Callers(3, c.pcs[:]) // runtime.Callers, readCallers, gateHook.pass
	return c
}

// site resolves c, or nil when no frame lies outside go-redis, the
// explorer and the runtime.
func (c *callers) site() *Site {
	if c == nil || c.n == 0 {
		return nil
	}
	frames := runtime.CallersFrames(c.pcs[:c.n])
	var via *Site
	for {
		f, more := frames.Next()
		if pkg := pkgOf(f.Function); f.Function != "" && !skipped(pkg) {
			s := siteOf(f, pkg)
			if inMain(pkg) {
				s.Via = via
				return s
			}
			if via == nil {
				via = s
			}
		}
		if !more {
			return via
		}
	}
}

// skipped says whether frames of pkg are the machinery between the
// lock's code and the gate.
func skipped(pkg string) bool {
	return pkg == gatePkg || adapters[pkg] || pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") ||
		pkg == "github.com/redis/go-redis/v9" || strings.HasPrefix(pkg, "github.com/redis/go-redis/v9/")
}

// adapters are the packages that adapt a lock to the engine (SkipCallers).
var adapters = map[string]bool{}

// SkipCallers names packages whose frames lie between a lock's code and
// the gate (the lab's adapter of its rungs, lockcheck's own): a call
// site is never theirs. It is for package initialization.
func SkipCallers(pkgs ...string) {
	for _, p := range pkgs {
		adapters[p] = true
	}
}

// gatePkg is the explorer's own package (the gate's).
var gatePkg = reflect.TypeFor[gateHook]().PkgPath()

// pkgOf is the import path of a function's package: what precedes the
// first dot after its last slash.
func pkgOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

func siteOf(f runtime.Frame, pkg string) *Site {
	fn := f.Function
	mod, version := moduleOf(pkg)
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
	file := path.Join(rel, path.Base(f.File))
	switch {
	case inMain(pkg):
		fn = fn[strings.LastIndexByte(fn, '/')+1:]
	case mod != "" && version != "":
		file = mod + "@" + version + "/" + file
	case mod != "":
		file = mod + "/" + file
	}
	return &Site{File: file, Line: f.Line, Func: fn}
}

// modules are the binary's: the main one first, then its dependencies.
var modules = sync.OnceValue(func() []debug.Module {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" {
		// No build info: the explorer's own module, as far as its path
		// tells (its package sits at the module's root).
		return []debug.Module{{Path: path.Dir(gatePkg)}}
	}
	mods := []debug.Module{bi.Main}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			mods = append(mods, debug.Module{Path: d.Path, Version: d.Replace.Version})
			continue
		}
		mods = append(mods, *d)
	}
	return mods
})

func inMain(pkg string) bool {
	main := modules()[0].Path
	return pkg == main || strings.HasPrefix(pkg, main+"/")
}

// moduleOf is the module pkg belongs to (the longest path that prefixes
// it), and its version; "" when the binary does not say.
func moduleOf(pkg string) (string, string) {
	best := debug.Module{}
	for _, m := range modules() {
		if (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) && len(m.Path) > len(best.Path) {
			best = m
		}
	}
	return best.Path, best.Version
}
