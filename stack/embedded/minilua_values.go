package embedded

import (
	mserver "github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
)

// toLua converts a parsed reply as Redis converts replies for Lua.
func toLua(l *lua.LState, r any) lua.LValue {
	switch v := r.(type) {
	case nil:
		return lua.LFalse
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case mserver.Simple:
		t := l.NewTable()
		t.RawSetString("ok", lua.LString(string(v)))
		return t
	case []any:
		t := l.CreateTable(len(v), 0)
		for i, e := range v {
			t.RawSetInt(i+1, toLua(l, e))
		}
		return t
	}
	return lua.LFalse
}

// writeLua answers a script's return value as Redis converts it.
func writeLua(c *mserver.Peer, v lua.LValue) {
	switch t := v.(type) {
	case lua.LBool:
		if t {
			c.WriteInt(1)
		} else {
			c.WriteNull()
		}
	case lua.LNumber:
		c.WriteInt(int(t))
	case lua.LString:
		c.WriteBulk(string(t))
	case *lua.LTable:
		if e := t.RawGetString("err"); e != lua.LNil {
			c.WriteError(lua.LVAsString(e))
			return
		}
		if ok := t.RawGetString("ok"); ok != lua.LNil {
			c.WriteInline(lua.LVAsString(ok))
			return
		}
		n := 0
		for t.RawGetInt(n+1) != lua.LNil {
			n++
		}
		c.WriteLen(n)
		for i := 1; i <= n; i++ {
			writeLua(c, t.RawGetInt(i))
		}
	default:
		c.WriteNull()
	}
}
