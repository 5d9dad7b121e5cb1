package embedded

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// A script shares this process with every embedded server of the stack,
// and a Go allocation the machine cannot give ends the process (a fatal
// error, no panic). gopher-lua has no allocator hook, so a script's
// memory is bounded in three places:
//
//   - the library functions whose result can be far larger than their
//     arguments (string.rep, string.format's widths, string.gsub,
//     table.concat) refuse, before they allocate, a result over
//     scriptMemory;
//   - a `..` expression joins at most maxConcat values (one instruction
//     of the VM, which nothing can stop midway), refused when loaded;
//   - a watch (watchMemory) stops the script between two instructions
//     once it has run for a moment and the process has allocated more
//     than scriptMemory since then: loops that grow tables or
//     concatenate strings.
//
// So the most one script can take is about maxConcat x scriptMemory, in
// its last instruction. The lab's scripts allocate a few hundred bytes.
const (
	scriptMemory = 64 << 20
	maxConcat    = 16
)

// errScriptMemory is the reply to a script stopped by the watch.
const errScriptMemory = "ERR Script killed: it allocated more than %d MB, the embedded Redis's limit for a script"

// watchPeriod is how often the watch looks; scripts shorter than that are
// never looked at (they cannot allocate much: the bounded functions and
// maxConcat bound each instruction).
const watchPeriod = time.Millisecond

// memWatch stops one script whose process has allocated too much. It
// counts from its first look, a watchPeriod in: reading the count costs
// about 2 µs, which the lab's scripts, done well before, never pay.
type memWatch struct {
	mu      sync.Mutex
	t       *time.Timer
	base    uint64 // 0 until the first look
	stopped bool
	over    bool
	cancel  context.CancelFunc
}

// allocated is the bytes this process has allocated since it started.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// watchMemory starts watching a script that cancel stops.
func watchMemory(cancel context.CancelFunc) *memWatch {
	w := &memWatch{cancel: cancel}
	w.mu.Lock()
	w.t = time.AfterFunc(watchPeriod, w.check)
	w.mu.Unlock()
	return w
}

func (w *memWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	switch n := allocated(); {
	case w.base == 0:
		w.base = n
	case n-w.base > scriptMemory:
		w.over = true
		w.cancel()
		return
	}
	w.t.Reset(watchPeriod)
}

// stop ends the watch and says whether it stopped the script.
func (w *memWatch) Stop() (over bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
	return w.over
}

// checkConcat refuses a compiled script with a `..` of more than
// maxConcat values, in it or in the functions it defines.
func checkConcat(p *lua.FunctionProto) error {
	for _, inst := range p.Code {
		if int(inst>>26) != lua.OP_CONCAT {
			continue
		}
		b, c := int(inst&0x1ff), int(inst>>9)&0x1ff
		if n := c - b + 1; n > maxConcat {
			return fmt.Errorf("ERR Error compiling script: a concatenation of %d values; the embedded Redis joins at most %d in one expression", n, maxConcat)
		}
	}
	for _, f := range p.FunctionPrototypes {
		if err := checkConcat(f); err != nil {
			return err
		}
	}
	return nil
}

// boundLibs replaces, in l's string and table libraries, the functions
// whose result can outgrow their arguments by versions that refuse a
// result over scriptMemory before making it.
func boundLibs(l *lua.LState) {
	str := l.GetGlobal("string").(*lua.LTable)
	tab := l.GetGlobal("table").(*lua.LTable)
	tooBig := func(l *lua.LState, fn string, n int64) {
		if n > scriptMemory {
			l.RaiseError("%s: a result of %d bytes is over the embedded Redis's %d MB for a script", fn, n, scriptMemory>>20)
		}
	}
	wrap := func(t *lua.LTable, name string, check func(l *lua.LState)) {
		orig := t.RawGetString(name).(*lua.LFunction)
		t.RawSetString(name, l.NewFunction(func(l *lua.LState) int {
			check(l)
			l.Insert(orig, 1)
			l.Call(l.GetTop()-1, lua.MultRet)
			return l.GetTop()
		}))
	}
	wrap(str, "rep", func(l *lua.LState) {
		s, n := l.CheckString(1), l.CheckInt64(2)
		if len(s) > 0 && n > scriptMemory/int64(len(s)) {
			l.RaiseError("string.rep: %d times %d bytes is over the embedded Redis's %d MB for a script", n, len(s), scriptMemory>>20)
		}
	})
	wrap(str, "format", func(l *lua.LState) {
		// Lua's own rule: a width or a precision has at most two digits
		// (Go's fmt would pad to any).
		f := l.CheckString(1)
		for i := 0; i < len(f); i++ {
			if f[i] != '%' {
				continue
			}
			if i+1 < len(f) && f[i+1] == '%' {
				i++
				continue
			}
			digits := 0
			for i++; i < len(f) && strings.IndexByte("-+ #0123456789.", f[i]) >= 0; i++ {
				if f[i] >= '0' && f[i] <= '9' {
					if digits++; digits > 2 {
						l.RaiseError("invalid format (width or precision too long)")
					}
				} else {
					digits = 0
				}
			}
		}
	})
	wrap(tab, "concat", func(l *lua.LState) {
		t := l.CheckTable(1)
		sep := int64(len(l.OptString(2, "")))
		i, j := l.OptInt(3, 1), l.OptInt(4, t.Len())
		var n int64
		for k := max(i, 1); k <= min(j, t.Len()); k++ {
			if v, ok := t.RawGetInt(k).(lua.LString); ok {
				n += int64(len(v))
			} else {
				n += 24 // a number's digits
			}
			n += sep
			tooBig(l, "table.concat", n)
		}
	})
	gsub := str.RawGetString("gsub").(*lua.LFunction)
	str.RawSetString("gsub", l.NewFunction(func(l *lua.LState) int {
		s, repl := l.CheckString(1), l.Get(3)
		maxN := int64(len(s)) + 1
		if n, ok := l.Get(4).(lua.LNumber); ok && int64(n) < maxN {
			maxN = max(int64(n), 0)
		}
		switch r := repl.(type) {
		case lua.LString:
			// Each match becomes repl, each %0-%9 in it at most s.
			per := int64(len(r)) + int64(strings.Count(string(r), "%"))*int64(len(s))
			tooBig(l, "string.gsub", int64(len(s))+maxN*per)
		case *lua.LTable, *lua.LFunction:
			// Whatever it gives for each match, summed as it goes.
			total := int64(len(s))
			l.SetTop(4)
			l.Replace(3, l.NewFunction(func(l *lua.LState) int {
				var v lua.LValue
				if t, ok := r.(*lua.LTable); ok {
					v = l.GetTable(t, l.Get(1))
				} else {
					l.Insert(r, 1)
					l.Call(l.GetTop()-1, 1)
					v = l.Get(-1)
				}
				if sv, ok := v.(lua.LString); ok {
					total += int64(len(sv))
					tooBig(l, "string.gsub", total)
				}
				l.Push(v)
				return 1
			}))
		}
		l.Insert(gsub, 1)
		l.Call(l.GetTop()-1, lua.MultRet)
		return l.GetTop()
	}))
}
