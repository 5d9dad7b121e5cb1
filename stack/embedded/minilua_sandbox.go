package embedded

import (
	lua "github.com/yuin/gopher-lua"
)

// sandbox takes out of l what Redis takes out of its scripts' Lua:
// whatever reads or runs a file (dofile, loadfile, and require and
// module, which find files), print (this process's stdout) and the
// register dump; and it makes setmetatable take tables only, as Lua
// 5.1's does (gopher-lua's would set the metatable of every string or
// number in the state). The os, io, debug and package libraries are
// never opened.
func sandbox(l *lua.LState) {
	for _, name := range []string{"dofile", "loadfile", "require", "module", "print", "_printregs"} {
		l.SetGlobal(name, lua.LNil)
	}
	set := l.GetGlobal("setmetatable").(*lua.LFunction)
	l.SetGlobal("setmetatable", l.NewFunction(func(l *lua.LState) int {
		l.CheckTable(1)
		l.Insert(set, 1)
		l.Call(l.GetTop()-1, 1)
		return 1
	}))
}

// tableCopy is a table's entries and metatable at one moment.
type tableCopy struct {
	t       *lua.LTable
	entries map[lua.LValue]lua.LValue
	meta    lua.LValue
}

// snapshot copies every table a script can reach in a fresh state: the
// globals, each library table, the strings' metatable.
func snapshot(l *lua.LState) []tableCopy {
	var out []tableCopy
	seen := map[*lua.LTable]bool{}
	add := func(v lua.LValue) {
		t, ok := v.(*lua.LTable)
		if !ok || seen[t] {
			return
		}
		seen[t] = true
		c := tableCopy{t: t, entries: map[lua.LValue]lua.LValue{}, meta: t.Metatable}
		t.ForEach(func(k, v lua.LValue) { c.entries[k] = v })
		out = append(out, c)
	}
	globals := l.G.Global
	add(globals)
	globals.ForEach(func(_, v lua.LValue) { add(v) })
	add(l.GetMetatable(lua.LString("")))
	return out
}

// restore puts the state back as snapshot found it, whatever the script
// did to its globals or its libraries (a client that redefined
// redis.call or string.format would otherwise have it so for every later
// script on this state): its own globals go, changed entries and
// metatables are put back, and the environment is the globals again
// (setfenv(0, t) changes it for the whole state).
func (st *scriptState) restore() {
	l := st.l
	l.Env = l.G.Global
	var stale []lua.LValue
	for _, c := range st.pristine {
		stale = stale[:0]
		c.t.ForEach(func(k, v lua.LValue) {
			if w, ok := c.entries[k]; !ok || w != v {
				stale = append(stale, k)
			}
		})
		for _, k := range stale {
			c.t.RawSet(k, lua.LNil)
		}
		for k, v := range c.entries {
			if c.t.RawGet(k) != v {
				c.t.RawSet(k, v)
			}
		}
		c.t.Metatable = c.meta
	}
}
